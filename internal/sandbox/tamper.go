package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Checks run the sandbox's own programs (grep, stat, id...) and libraries,
// which root in the sandbox can replace. So before checks run, the sandbox's
// file system is compared with its image (Runtime.Changes), and every change
// to system programs, libraries and the loader's settings must be explained
// by dpkg's records of what packages installed; otherwise the checks do not
// run and fail with the reason. docs/sandboxes.md states the rule and its limits.

// Tamper is a change to a sandbox's system files that nothing explains.
type Tamper struct {
	Path string
	Why  string
}

// Tampering is what the verification of a sandbox's system files found.
type Tampering struct {
	Found      []Tamper // unexplained changes, sorted by path
	Unlisted   int      // more unexplained changes, not listed
	Unverified string   // why the files could not be verified at all ("" when they were)

	// When the verification began, by the clock of the sandbox's file
	// change times: Unix seconds, and "YYYY-MM-DD hh:mm:ss.nnnnnnnnn +0000".
	atUnix, at string
}

// Clean reports whether nothing was found.
func (t *Tampering) Clean() bool {
	return t == nil || (len(t.Found) == 0 && t.Unlisted == 0 && t.Unverified == "")
}

// Reason is what a learner reads when checks did not run: the first few
// paths and how to recover.
func (t *Tampering) Reason() string {
	if len(t.Found) == 0 {
		return "Checks did not run: this sandbox's system files could not be verified. Start again in a new sandbox"
	}
	var paths []string
	for _, f := range t.Found[:min(3, len(t.Found))] {
		paths = append(paths, truncate(f.Path, 80))
	}
	named := strings.Join(paths, ", ")
	if n := len(t.Found) - len(paths) + t.Unlisted; n > 0 {
		named += fmt.Sprintf(" and %d more", n)
	}
	return "Checks did not run: system files of this sandbox were changed in a way its packages do not explain (" +
		named + "). Restore them (or remove what you added), or start again in a new sandbox"
}

// String lists everything found, a line each, for admins.
func (t *Tampering) String() string {
	var b strings.Builder
	for _, f := range t.Found {
		fmt.Fprintf(&b, "%s: %s\n", f.Path, f.Why)
	}
	if t.Unlisted > 0 {
		fmt.Fprintf(&b, "(%d more not listed)\n", t.Unlisted)
	}
	if t.Unverified != "" {
		fmt.Fprintf(&b, "not verified: %s\n", t.Unverified)
	}
	return b.String()
}

// systemDirs hold the programs and libraries scripts run (the first four
// pairs are one directory each on a merged-/usr system such as Debian's).
var systemDirs = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec"}

// The loader's settings, and the alternatives system's links.
const (
	ldPreload    = "/etc/ld.so.preload" // libraries loaded into every program: never explained
	ldCache      = "/etc/ld.so.cache"   // where each library is found
	ldConf       = "/etc/ld.so.conf"    // and ldConf + ".d/"
	alternatives = "/etc/alternatives/"
)

// suspicion is what a container's changes tell before looking inside it.
type suspicion struct {
	verify  []Change // changed or added paths dpkg's records must explain
	records []string // dpkg's record files changed since the image
	found   []Tamper // tampering whatever the records say
}

// suspects sorts a container's changes. Deletions are left alone: a
// missing program makes a check fail, never pass.
func suspects(changes []Change) suspicion {
	var s suspicion
	for _, c := range changes {
		if c.Kind == ChangeDeleted {
			continue
		}
		switch {
		case isRecord(c.Path):
			s.records = append(s.records, c.Path)
		case !watched(c.Path):
		case c.Path == ldPreload:
			s.found = append(s.found, Tamper{c.Path, "makes the loader put a library of its choice into every program"})
		case strings.IndexFunc(c.Path, unicode.IsControl) >= 0:
			s.found = append(s.found, Tamper{strconv.Quote(c.Path), "a name with control characters"})
		default:
			s.verify = append(s.verify, c)
		}
	}
	return s
}

// watched reports whether a path is one whose changes need an explanation.
func watched(p string) bool {
	switch {
	case p == ldPreload, p == ldCache, p == ldConf, strings.HasPrefix(p, ldConf+".d/"), strings.HasPrefix(p, alternatives):
		return true
	}
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// isRecord reports whether a path is one of dpkg's records: file lists and
// checksums per package, the status file (with the conffiles' checksums) and
// the alternatives.
func isRecord(p string) bool {
	return p == "/var/lib/dpkg/status" || strings.HasPrefix(p, "/var/lib/dpkg/info/") || strings.HasPrefix(p, "/var/lib/dpkg/alternatives/")
}

// maxTampers bounds what one verification reports.
const maxTampers = 20

// Tampering looks for changes to c's system programs, libraries and loader
// settings that dpkg's records do not explain; Clean when the sandbox is as
// its packages made it. It needs a running sandbox.
//
// The engine's list of changes (Runtime.Changes) tells added files from
// modified ones, but it compares files by their metadata, and a replacement
// of the same size, mode and modification time (which root can set) does not
// show in it. So the verification in the sandbox also takes every file under
// the watched paths whose change time (which nobody can set back) is not
// older than the container.
func (s *Service) Tampering(ctx context.Context, c *Container) (*Tampering, error) {
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, rt, c); err != nil {
		return nil, err
	}
	st, err := rt.Inspect(ctx, c.EngineID)
	if err != nil {
		return nil, err
	}
	if st.Created.IsZero() {
		return nil, fmt.Errorf("the engine gives no creation time for container %d", c.ID)
	}
	changes, err := rt.Changes(ctx, c.EngineID)
	if errors.Is(err, ErrUnsupported) {
		// A machine's changes are blocks of its disk: the verification's
		// look at change times (below) is what finds replaced files there.
		changes, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	sus := suspects(changes)
	t := &Tampering{}
	if err := s.verify(ctx, rt, c, st.Created, sus, t); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range t.Found {
		seen[f.Path] = true
	}
	for _, f := range sus.found {
		if !seen[f.Path] {
			t.Found = append(t.Found, f)
		}
	}
	sort.Slice(t.Found, func(i, j int) bool { return t.Found[i].Path < t.Found[j].Path })
	return t, nil
}

// verifyBound is how long the verification of c's system files may take:
// 30 s in a container; 120 s in a machine, whose whole Debian runs under
// TCG on hosts without KVM and took more than 30 s there with several
// machines busy (CI, 2 cores).
func verifyBound(c *Container) time.Duration {
	if c.Kind == KindMachine {
		return 120 * time.Second
	}
	return 30 * time.Second
}

// verify runs verifyScript in c, as root with the trusted tools only, with
// the suspects from the engine's changes, and adds to t what it found
// unexplained. A verification that does not finish makes t Unverified:
// checks never run on a sandbox that could not be verified.
func (s *Service) verify(ctx context.Context, rt Runtime, c *Container, created time.Time, sus suspicion, t *Tampering) error {
	var in strings.Builder
	for _, p := range sus.records {
		if strings.IndexFunc(p, unicode.IsControl) < 0 {
			fmt.Fprintf(&in, "R\t%s\n", p)
		}
	}
	for _, ch := range sus.verify {
		kind := "M"
		if ch.Kind == ChangeAdded {
			kind = "A"
		}
		fmt.Fprintf(&in, "%s\t%s\n", kind, ch.Path)
	}
	bound := verifyBound(c)
	spec := ExecSpec{User: "root", Dir: "/", Cmd: slices.Concat([]string{trustedEnv, "-i"}, scriptEnv,
		[]string{trustedTimeout, "-s", "KILL", strconv.Itoa(int(bound.Seconds())), trustedSh, "-c", verifyScript, "verify",
			strconv.Itoa(maxTampers), strconv.FormatInt(created.Unix(), 10)})}
	ctx, cancel := context.WithTimeout(ctx, bound+5*time.Second)
	defer cancel()
	out := &capped{max: 64 << 10}
	code, err := rt.Run(ctx, c.EngineID, spec, strings.NewReader(in.String()), out, io.Discard)
	if err != nil && ctx.Err() == nil {
		return err
	}
	if complete := parseVerified(out.String(), t); err != nil || code != 0 || !complete || t.at == "" {
		t.Unverified = fmt.Sprintf("the verification ended with exit code %d before its end", code)
	}
	return nil
}

// parseVerified reads verifyScript's output into t: a line "T\tPATH\tWHY"
// per unexplained path, "more\tN" when it stopped listing, and "ok" at the
// end, which complete reports.
func parseVerified(out string, t *Tampering) (complete bool) {
	for line := range strings.Lines(out) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), "\t", 3)
		switch {
		case len(f) == 3 && f[0] == "T":
			t.Found = append(t.Found, Tamper{f[1], f[2]})
		case len(f) == 2 && f[0] == "more":
			t.Unlisted, _ = strconv.Atoi(f[1])
		case len(f) == 3 && f[0] == "at":
			t.atUnix, t.at = f[1], f[2]
		case len(f) == 1 && f[0] == "ok":
			complete = true
		}
	}
	return complete
}

// What the verification looks at, in the sandbox's shell syntax: the
// watched paths (systemDirs and the loader's and alternatives' settings) and
// dpkg's records.
const (
	watchedPaths = "/bin /sbin /lib /lib32 /lib64 /libx32 /usr/bin /usr/sbin /usr/lib /usr/lib32 /usr/lib64 /usr/libx32 /usr/libexec " +
		"/etc/alternatives /etc/ld.so.conf /etc/ld.so.conf.d /etc/ld.so.cache /etc/ld.so.preload"
	recordPaths = "/var/lib/dpkg/info /var/lib/dpkg/status /var/lib/dpkg/alternatives"
)

// stampNow sets $at to the current time as file change times show it
// (stat's %z, in UTC by the scripts' TZ): the change time of a new temporary
// file, the same clock to the nanosecond; whole seconds if none can be made.
const stampNow = `if ref=$(mktemp 2>/dev/null); then at=$(stat -c %z "$ref"); rm -f "$ref"; fi
[ -n "$at" ] || at="$(date -u '+%Y-%m-%d %H:%M:%S').000000000 +0000"`

// scriptEnv is the environment of tuxlab's own scripts: the trusted tools
// only, and UTC whatever the sandbox's /etc/localtime says.
var scriptEnv = []string{"PATH=" + toolsBin, "LC_ALL=C", "TZ=UTC0"}

// changedScript prints "T\tPATH\tWHY" for each watched file or dpkg record
// changed since $2 (as stampNow gives it; $1 in Unix seconds), at most 20,
// then "ok".
const changedScript = `t1=$1 at=$2
mins=$(( ($(date +%s) - t1) / 60 + 2 ))
set --
for d in ` + watchedPaths + " " + recordPaths + `; do
	[ -e "$d" ] && [ ! -L "$d" ] && set -- "$@" "$d"
done
[ $# -gt 0 ] && find "$@" -xdev ! -type d -cmin -$mins 2>/dev/null | while IFS= read -r p; do
	case $p in /sbin/docker-init|/usr/sbin/docker-init) continue ;; esac
	c=$(stat -c %z "$p" 2>/dev/null) && printf '%s\t%s\n' "$c" "$p"
done | awk -F'\t' -v at="$at" '$1 >= at && n++ < 20 { printf "T\t%s\tchanged while the checks ran\n", $2 }'
echo ok`

// changedSince looks, after checks ran, for watched files or records changed
// since the verification before them began (at): a program of the learner's
// could otherwise swap a system file in while checks run and back after.
func (s *Service) changedSince(ctx context.Context, rt Runtime, c *Container, before *Tampering) (*Tampering, error) {
	spec := ExecSpec{User: "root", Dir: "/", Cmd: slices.Concat([]string{trustedEnv, "-i"}, scriptEnv,
		[]string{trustedTimeout, "-s", "KILL", strconv.Itoa(int(verifyBound(c).Seconds())), trustedSh, "-c", changedScript, "changed", before.atUnix, before.at})}
	ctx, cancel := context.WithTimeout(ctx, verifyBound(c)+5*time.Second)
	defer cancel()
	out := &capped{max: 64 << 10}
	code, err := rt.Run(ctx, c.EngineID, spec, nil, out, io.Discard)
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	t := &Tampering{}
	if complete := parseVerified(out.String(), t); err != nil || code != 0 || !complete {
		t.Unverified = fmt.Sprintf("the look at what changed during the checks ended with exit code %d before its end", code)
	}
	return t, nil
}

// verifyScript explains each suspect by dpkg's records and prints what it
// cannot explain (see parseVerified), at most $1 paths. $2 is when the
// container was created (Unix time). Suspects are the engine's changes
// (stdin: "R\tPATH" for a dpkg record file, "M\tPATH" or "A\tPATH" for a
// modified or added path) and every file under the watched paths, or of
// dpkg's records, whose change time is not older than the container (taken
// as modified when the engine did not list them as added). It runs under the
// trusted BusyBox sh, whose find, stat, md5sum, readlink, realpath and awk
// are its own applets. The rules:
//
//   - A regular file is explained when a package's md5sums (or, for a
//     conffile, the status file) give its checksum. A file the image had
//     counts only records the image had too: records changed in the sandbox
//     explain only files that were added (by dpkg -i).
//   - A symbolic link is explained when no package installed a regular file
//     there, a package installed it (its file list, with the same rule) and it
//     resolves into the system directories; or when it belongs to the
//     alternatives system as dpkg's alternatives records say.
//   - /etc/ld.so.cache is explained when every library it names lies in the
//     system directories; /etc/ld.so.preload never is.
//
// Directories need no explanation: what is in them is looked at on its own.
// Merged-/usr aliases (/bin and /usr/bin) are one directory.
const verifyScript = `max=$1 t0=$2
now=$(date +%s)
` + stampNow + `
printf 'at\t%s\t%s\n' "$now" "$at"
tab=$(printf '\t')
nl=$(printf '\nx'); nl=${nl%x}
watched=
for d in ` + watchedPaths + `; do
	[ -e "$d" ] && [ ! -L "$d" ] && watched="$watched $d"
done
records=
for d in ` + recordPaths + `; do
	[ -e "$d" ] && records="$records $d"
done
mins=$(( (now - t0) / 60 + 2 ))
# newer KIND PATH...: "KIND\tPATH" for each file under the paths changed since
# t0 (-cmin narrows, the exact change time decides).
newer() {
	k=$1; shift
	[ $# -gt 0 ] || return 0
	find "$@" -xdev ! -type d -cmin -$mins 2>/dev/null | while IFS= read -r p; do
		c=$(stat -c %Z "$p" 2>/dev/null) && [ "$c" -ge "$t0" ] && printf '%s\t%s\n' "$k" "$p"
	done
}
insys() {
	case $1 in /bin/*|/sbin/*|/lib/*|/lib32/*|/lib64/*|/libx32/*|/usr/bin/*|/usr/sbin/*|/usr/lib/*|/usr/lib32/*|/usr/lib64/*|/usr/libx32/*|/usr/libexec/*) return 0 ;; esac
	return 1
}
ldlibs() {
	l=/sbin/ldconfig; [ -x $l ] || l=/usr/sbin/ldconfig
	[ -x $l ] || { echo "?"; return; }
	$l -p 2>/dev/null | sed -n 's/.* => //p' | while IFS= read -r lib; do
		r=$(realpath "$lib" 2>/dev/null) || continue
		insys "$r" || printf '%s\n' "$lib" | tr '\t' ' '
	done | head -n 1
}
facts=$({
	cat
	newer M $watched
	newer R $records
	if [ -n "$watched" ] && [ -n "$(find $watched -xdev -cmin -$mins \( -name "*$nl*" -o -name "*$tab*" \) 2>/dev/null | head -c 1)" ]; then
		printf 'X\t(a name with control characters)\tin a system directory\n'
	fi
} | awk -F'\t' '!seen[($1 == "R" ? "R" : "P") $2]++' | while IFS= read -r line; do
	k=${line%%"$tab"*}; p=${line#*"$tab"}
	case $p in /sbin/docker-init|/usr/sbin/docker-init) continue ;; esac # the engine's init, mounted read-only
	case $k in
	R) printf 'R\t%s\n' "$p" ;;
	X) printf '%s\n' "$line" ;;
	M|A)
		if [ -L "$p" ]; then
			t=$(readlink "$p"); r=$(realpath "$p" 2>/dev/null) || r=
			case $t$r in *"$tab"*|*"$nl"*) printf 'X\t%s\ta link whose target has control characters\n' "$p"; continue ;; esac
			printf 'L\t%s\t%s\t%s\t%s\n' "$k" "$p" "$t" "$r"
		elif [ "$p" = /etc/ld.so.preload ]; then
			printf 'X\t%s\tmakes the loader put a library of its choice into every program\n' "$p"
		elif [ "$p" = /etc/ld.so.cache ]; then
			printf 'C\t%s\t%s\t%s\n' "$k" "$p" "$(ldlibs)"
		elif [ -f "$p" ]; then
			m=$(md5sum <"$p") || m=unreadable
			printf 'F\t%s\t%s\t%s\n' "$k" "$p" "${m%% *}"
		fi ;;
	esac
done)
# dpkg's records (a megabyte of text) are read only when something needs them.
set --
case $nl$facts in *"$nl"[FLC]"$tab"*)
	for f in /var/lib/dpkg/info/*.md5sums /var/lib/dpkg/info/*.list /var/lib/dpkg/status /var/lib/dpkg/alternatives/*; do
		[ -f "$f" ] && set -- "$@" "$f"
	done ;;
esac
printf '%s\n' "$facts" | awk -v max="$max" '
function sys(p) { return p ~ /^\/(usr\/)?(bin|sbin|lib|lib32|lib64|libx32)\// || p ~ /^\/usr\/libexec\// }
function alias(p) {
	if (p ~ /^\/usr\/(bin|sbin|lib|lib32|lib64|libx32)\//) return substr(p, 5)
	if (p ~ /^\/(bin|sbin|lib|lib32|lib64|libx32)\//) return "/usr" p
	return p
}
function keep(a, k, level) { if (a[k] < level) a[k] = level }
function known(p, m, need) { return sums[p, m] >= need || sums[alias(p), m] >= need }
function hasfile(p) { return (p in file) || (alias(p) in file) }
function listed(p, need) { return list[p] >= need || list[alias(p)] >= need }
function report(p, why) { if (++bad <= max) printf "T\t%s\t%s\n", p, why }
BEGIN { FS = "\t" }
FILENAME == "-" {
	if ($0 == "") next
	if ($1 == "R") untrusted[$2] = 1
	else if ($1 == "X") report($2, $3)
	else { n++; kind[n] = $1; how[n] = $2; path[n] = $3; a[n] = $4; b[n] = $5 }
	next
}
{
	level = (FILENAME in untrusted) ? 1 : 2
	if (FILENAME ~ /\.md5sums$/) {
		p = "/" substr($0, 35); keep(sums, p SUBSEP substr($0, 1, 32), level); file[p] = 1
	} else if (FILENAME ~ /\.list$/) {
		keep(list, $0, level)
	} else if (FILENAME == "/var/lib/dpkg/status") {
		if ($0 ~ /^ \//) { split($0, w, " "); if (length(w[2]) == 32) { keep(sums, w[1] SUBSEP w[2], level); file[w[1]] = 1 } }
	} else {
		alt[substr(FILENAME, 28), $0] = 1; altlink[$0] = 1
	}
}
END {
	for (i = 1; i <= n; i++) {
		p = path[i]; need = how[i] == "M" ? 2 : 1; why = ""
		if (kind[i] == "F") {
			if (known(p, a[i], 1) && !known(p, a[i], need)) why = "matches only package records changed in this sandbox"
			else if (!known(p, a[i], need)) why = hasfile(p) ? "differs from what its package installed" : "no package installed it"
		} else if (kind[i] == "L") {
			t = a[i]; r = b[i]
			if (hasfile(p)) why = "a file of a package replaced by a link"
			else if (substr(p, 1, 18) == "/etc/alternatives/") { if (!alt[substr(p, 19), t]) why = "an alternative that was never registered" }
			else if (substr(t, 1, 18) == "/etc/alternatives/") { if (!altlink[p] && !altlink[alias(p)]) why = "a link to an alternative that was never registered" }
			else if (!listed(p, need)) why = "a link no package installed"
			else if (r != "" && !sys(r)) why = "a link out of the system directories"
		} else if (kind[i] == "C") {
			if (a[i] == "?") why = "cannot be read without ldconfig"
			else if (a[i] != "") why = "names a library out of the system directories: " a[i]
		}
		if (why != "") report(p, why)
	}
	if (bad > max) printf "more\t%d\n", bad - max
	print "ok"
}' - "$@"`

// CheckIn runs checks in c as ExecIn does, unless the sandbox's system files
// were tampered with (Tampering): then none of them runs, and each result
// fails with the reason (Result.Tampered). Files changed while the checks ran
// make their results the same failure. Labs and exams run their checks
// through it; setups and solutions go through ExecIn.
func (s *Service) CheckIn(ctx context.Context, c *Container, checks ...Script) ([]*Result, error) {
	return s.CheckInBudget(ctx, c, Budget{}, checks...)
}

// CheckInBudget is CheckIn with the checks bounded as a whole by b.
func (s *Service) CheckInBudget(ctx context.Context, c *Container, b Budget, checks ...Script) ([]*Result, error) {
	if c.Status != StatusRunning {
		return nil, ErrNotRunning
	}
	for _, sc := range checks {
		if err := validScript(sc); err != nil {
			return nil, err
		}
	}
	t, err := s.Tampering(ctx, c)
	if err != nil {
		return nil, err
	}
	if t.Clean() {
		results, err := s.execIn(ctx, c, b, checks)
		if err != nil {
			return nil, err
		}
		rt, _ := s.rtFor(c.Kind) // Tampering found it
		if t, err = s.changedSince(ctx, rt, c, t); err != nil || t.Clean() {
			return results, err
		}
	}
	s.opt.Log.Warn("checks not run: the sandbox's system files were tampered with", "container_id", c.ID, "user_id", c.UserID, "found", t.String())
	results := make([]*Result, len(checks))
	for i := range checks {
		results[i] = &Result{ExitCode: -1, Tampered: t}
	}
	if _, err := s.Touch(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
		return nil, err
	}
	return results, nil
}
