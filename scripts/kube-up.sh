#!/usr/bin/env bash
# Bring up a one-node Kubernetes on this machine (or reuse the running one) for
# tuxlab's Kubernetes sandbox driver, and print the admin kubeconfig's path as
# the last line of output.
#
#   ./scripts/kube-up.sh              # build when needed, start what is not running
#   ./scripts/kube-up.sh --down       # stop every process it started
#   ./scripts/kube-up.sh --build-only # only build (or find cached) binaries
#
# Nothing is fetched from a container registry: kube-apiserver, kubelet,
# kube-scheduler and kube-controller-manager are built from the Go module proxy
# through a wrapper module (k8s.io/kubernetes cannot be `go install`ed because
# of its replace directives), etcd, containerd and the CNI plugins come from
# Debian, the pause image is compiled here, and the sandbox images are imported
# from the local Docker engine. docs/kubernetes.md explains the pieces.
#
# Binaries: /var/cache/tuxlab/kube/<version>-<hash of the build steps>, rebuilt
# only when missing (about 10 minutes of CPU cold). State: /var/lib/tuxlab/kube.
# Logs: /var/log/tuxlab-kube-<component>.log. The cluster runs its own
# containerd (own root, state and socket); Docker's containerd is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSION=${TUXLAB_KUBE_VERSION:-v1.34.4}
CACHE_ROOT=${TUXLAB_KUBE_CACHE:-/var/cache/tuxlab/kube}
STATE=${TUXLAB_KUBE_STATE:-/var/lib/tuxlab/kube}
LOGDIR=/var/log
# The sandbox images the cluster gets from Docker: what the contract suite and
# the bundled curriculum use. TUXLAB_KUBE_IMAGES replaces the list.
IMAGES=${TUXLAB_KUBE_IMAGES:-tuxlab/sandbox-debian:latest tuxlab/sandbox-busybox:latest}
PAUSE_IMAGE=localhost/pause:tuxlab
# The storage class for TUXLAB_KUBE_STORAGE_CLASS, its pool of volumes, and
# their directory (under /tmp: the only place the hostPath deleter deletes).
STORAGE_CLASS=${TUXLAB_KUBE_TEST_STORAGE_CLASS:-tuxlab-local}
PV_POOL=${TUXLAB_KUBE_PV_POOL:-32}
PV_DIR=/tmp/tuxlab-kube-pv
SOCK=$STATE/containerd/containerd.sock

say() { printf '==> %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

apt_install() {
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		die "cannot install $* here: run as root on Debian, or install it yourself"
	fi
	if [ -z "${TUXLAB_APT_UPDATED:-}" ]; then
		say "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		export TUXLAB_APT_UPDATED=1
	fi
	say "installing $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# write_wrapper writes, in the current directory, a module that requires
# k8s.io/kubernetes and points every staging replace of its go.mod (the zip on
# the module proxy has no staging/ directory) at the published k8s.io module of
# the same minor version.
write_wrapper() {
	local dir staging
	dir=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
	[ -n "$dir" ] || die "go mod download k8s.io/kubernetes@$KUBE_VERSION failed"
	staging="v0.${KUBE_VERSION#v1.}"
	{
		printf 'module k8sbuild\n\ngo 1.24.0\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KUBE_VERSION"
		grep -E '=> \./staging' "$dir/go.mod" | awk -v v="$staging" '{print "\t"$1" => "$1" "v}'
		echo ')'
	} >go.mod
	# The pause container's source, for build_pause.
	cp "$dir/build/pause/linux/pause.c" pause.c
	chmod u+w pause.c
}

# build_bins builds the four Kubernetes binaries into $1. The ldflags set the
# version: without them it reads v0.0.0-master+$Format:%H$, which kubectl
# cannot parse.
build_bins() {
	local out=$1 minor ldf cmd
	minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	ldf="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
	ldf="$ldf -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
	for cmd in kube-apiserver kubelet kube-scheduler kube-controller-manager; do
		go get "k8s.io/kubernetes/cmd/$cmd@$KUBE_VERSION"
	done
	for cmd in kube-apiserver kubelet kube-scheduler kube-controller-manager; do
		say "building $cmd (the first one takes several minutes)"
		go build -trimpath -ldflags "$ldf" -o "$out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
	done
	gcc -Os -static -o "$out/pause" pause.c
}

# bin_dir prints the cache directory of this script's build inputs: the
# version, the Go version and the text of the build functions.
bin_dir() {
	local sum
	sum=$({ echo "$KUBE_VERSION"; go version; declare -f write_wrapper build_bins; } | sha256sum | cut -c1-12)
	echo "$CACHE_ROOT/$KUBE_VERSION-$sum"
}

ensure_bins() {
	BIN=$(bin_dir)
	if [ -x "$BIN/kube-controller-manager" ] && [ -x "$BIN/pause" ] && [ -f "$BIN/.complete" ]; then
		return
	fi
	command -v go >/dev/null || die "Go is missing: install Go 1.26 or newer"
	command -v gcc >/dev/null || apt_install gcc libc6-dev
	say "building Kubernetes $KUBE_VERSION into $BIN (about 10 minutes of CPU the first time; log: $LOGDIR/tuxlab-kube-build.log)"
	local started tmp
	started=$(date +%s)
	tmp="$BIN.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp/src"
	(
		cd "$tmp/src"
		write_wrapper
		build_bins "$tmp"
	) 2>&1 | tee "$LOGDIR/tuxlab-kube-build.log" | grep --line-buffered '^==>' >&2 || true
	[ -x "$tmp/pause" ] || die "build failed: see $LOGDIR/tuxlab-kube-build.log"
	rm -rf "$tmp/src"
	touch "$tmp/.complete"
	rm -rf "$BIN"
	mv "$tmp" "$BIN"
	say "built in $(($(date +%s) - started)) s"
}

# Everything below runs the cluster.
KUBECONFIG_ADMIN=$STATE/admin.kubeconfig
NAMESPACE=${TUXLAB_KUBE_NAMESPACE:-tuxlab-sandboxes}
# The tools image goes into the cluster with the sandbox images.
TOOLS_IMAGE=${TUXLAB_SANDBOX_TOOLS_IMAGE:-tuxlab/sandbox-tools:latest}

ensure_packages() {
	local missing=()
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v containerd >/dev/null || missing+=(containerd)
	[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v curl >/dev/null || missing+=(curl)
	command -v kubectl >/dev/null || missing+=(kubernetes-client)
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "${missing[@]}"
	fi
	command -v docker >/dev/null || die "docker is missing: the sandbox images come from the local Docker engine (scripts/ensure-engine.sh)"
	# A stopped etcd.service of the package is fine; a running one holds the ports.
	if systemctl is-active --quiet etcd 2>/dev/null; then
		systemctl stop etcd
	fi
}

# running NAME: the process of component NAME runs.
running() {
	local pid
	pid=$(cat "$STATE/run/$1.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# launch NAME CMD...: start component NAME in the background, its output in
# its log, unless it runs already.
launch() {
	local name=$1
	shift
	if running "$name"; then
		return
	fi
	say "starting $name (log: $LOGDIR/tuxlab-kube-$name.log)"
	setsid "$@" >>"$LOGDIR/tuxlab-kube-$name.log" 2>&1 </dev/null &
	echo $! >"$STATE/run/$name.pid"
}

# wait_for WHAT SECONDS CMD...: retry CMD until it succeeds, showing progress.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then
			return
		fi
		if ((i > 0 && i % 20 == 0)); then
			say "still waiting for $what ($((i / 2)) s)"
		fi
		sleep 0.5
	done
	die "$what did not come up in $secs s: see $LOGDIR/tuxlab-kube-*.log"
}

# pki makes the tokens, the service account key and the kubeconfigs, once.
pki() {
	local d=$STATE/pki
	mkdir -p "$d" "$STATE/run" "$STATE/etcd" "$STATE/kubelet" "$STATE/containerd" "$STATE/cni/net.d"
	chmod 700 "$d"
	if [ ! -f "$d/tokens.csv" ]; then
		# The admin (system:masters) and the node (system:nodes, for the Node
		# authorizer and the NodeRestriction admission plugin).
		printf '%s,admin,admin,system:masters\n%s,system:node:localhost,node,system:nodes\n' \
			"$(openssl rand -hex 24)" "$(openssl rand -hex 24)" >"$d/tokens.csv"
	fi
	if [ ! -f "$d/sa.key" ]; then
		openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
		openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
	fi
}

# kubeconfig FILE TOKEN: a kubeconfig for the local API server.
kubeconfig() {
	cat >"$1" <<-KC
		apiVersion: v1
		kind: Config
		clusters:
		- name: tuxlab
		  cluster:
		    server: https://127.0.0.1:6443
		    certificate-authority: $STATE/pki/apiserver.crt
		users:
		- name: user
		  user:
		    token: $2
		contexts:
		- name: tuxlab
		  context: {cluster: tuxlab, user: user}
		current-context: tuxlab
	KC
	chmod 600 "$1"
}

# containerd_config writes the second containerd's configuration: Debian's
# defaults with a private root, state and socket, the local pause image, the
# Debian CNI plugins, and restrict_oom_score_adj (without it every container
# fails to start here: oom_score_adj -998 needs CAP_SYS_RESOURCE).
containerd_config() {
	local c=$STATE/containerd
	containerd config default | sed \
		-e "s#^root = .*#root = \"$c/root\"#" \
		-e "s#^state = .*#state = \"$c/state\"#" \
		-e "s#\"/run/containerd/containerd.sock\"#\"$SOCK\"#" \
		-e "s#restrict_oom_score_adj = false#restrict_oom_score_adj = true#" \
		-e "s#sandbox_image = .*#sandbox_image = \"$PAUSE_IMAGE\"#" \
		-e "s#bin_dir = \"/opt/cni/bin\"#bin_dir = \"/usr/lib/cni\"#" \
		-e "s#conf_dir = \"/etc/cni/net.d\"#conf_dir = \"$STATE/cni/net.d\"#" \
		-e "s#path = \"/opt/containerd\"#path = \"$c/opt\"#" >"$c/config.toml"
	grep -q "restrict_oom_score_adj = true" "$c/config.toml" || die "containerd's default configuration changed: restrict_oom_score_adj not set"
	cat >"$STATE/cni/net.d/10-tuxlab.conflist" <<-CNI
		{"cniVersion": "0.4.0", "name": "tuxlab", "plugins": [
		  {"type": "bridge", "bridge": "tuxlab-cni0", "isGateway": true, "ipMasq": false,
		   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.7.0/24"}]], "dataDir": "$STATE/cni/ipam"}},
		  {"type": "portmap", "capabilities": {"portMappings": true}}]}
	CNI
}

kubelet_config() {
	cat >"$STATE/kubelet/config.yaml" <<-KC
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		cgroupDriver: cgroupfs
		containerRuntimeEndpoint: unix://$SOCK
		failCgroupV1: false
		failSwapOn: false
		address: 127.0.0.1
		readOnlyPort: 0
		authentication:
		  anonymous: {enabled: true}
		  webhook: {enabled: false}
		authorization: {mode: AlwaysAllow}
		evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
		podPidsLimit: 256
	KC
}

token_of() { awk -F, -v u="$1" '$2==u {print $1}' "$STATE/pki/tokens.csv"; }

api_ready() { curl -sfk --max-time 2 -H "Authorization: Bearer $(token_of admin)" https://127.0.0.1:6443/readyz; }

k() { kubectl --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# start_all starts what does not run yet, in order, each once the one before answers.
start_all() {
	pki
	launch etcd etcd --name tuxlab --data-dir "$STATE/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster tuxlab=http://127.0.0.1:2380
	wait_for etcd 60 curl -sf --max-time 2 http://127.0.0.1:2379/health
	launch kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
		--cert-dir="$STATE/pki" --token-auth-file="$STATE/pki/tokens.csv" --authorization-mode=Node,RBAC \
		--service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$STATE/pki/sa.pub" \
		--service-account-signing-key-file="$STATE/pki/sa.key" --service-cluster-ip-range=10.96.0.0/16 \
		--kubelet-preferred-address-types=Hostname
	wait_for kube-apiserver 180 api_ready
	kubeconfig "$KUBECONFIG_ADMIN" "$(token_of admin)"
	kubeconfig "$STATE/kubelet/node.kubeconfig" "$(token_of system:node:localhost)"
	containerd_config
	launch containerd containerd --config "$STATE/containerd/config.toml"
	forward_bridge
	wait_for containerd 60 ctr -a "$SOCK" version
	import_images
	kubelet_config
	launch kubelet "$BIN/kubelet" --config "$STATE/kubelet/config.yaml" \
		--kubeconfig "$STATE/kubelet/node.kubeconfig" --hostname-override=localhost --root-dir "$STATE/kubelet/root"
	launch kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$KUBECONFIG_ADMIN" --leader-elect=false
	launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG_ADMIN" \
		--leader-elect=false --service-account-private-key-file="$STATE/pki/sa.key" \
		--root-ca-file="$STATE/pki/apiserver.crt" --use-service-account-credentials=false
	wait_for "node localhost Ready" 180 node_ready
	k get namespace "$NAMESPACE" >/dev/null 2>&1 || k create namespace "$NAMESPACE" >/dev/null
	wait_for "service account default in $NAMESPACE" 60 k -n "$NAMESPACE" get serviceaccount default
	storage_class
}

# storage_class gives the cluster the storage class $STORAGE_CLASS for the
# driver's kept state (TUXLAB_KUBE_STORAGE_CLASS) without a provisioner: a
# pool of $PV_POOL pre-made hostPath volumes, topped up on every run. Their
# reclaim policy is Delete: when a sandbox's claim goes, the controller
# manager's hostPath deleter removes the directory (it deletes only under
# /tmp) and the volume, so each kept sandbox ever made takes one volume from
# the pool until the next run. One node only: hostPath is that node's disk,
# and nothing bounds a volume's size.
storage_class() {
	local i name have made=0
	k apply -f - >/dev/null <<-EOF
		apiVersion: storage.k8s.io/v1
		kind: StorageClass
		metadata:
		  name: $STORAGE_CLASS
		provisioner: kubernetes.io/no-provisioner
		reclaimPolicy: Delete
		volumeBindingMode: Immediate
	EOF
	have=$(k get pv -o name)
	for ((i = 1; i <= PV_POOL; i++)); do
		name=$STORAGE_CLASS-$i
		if grep -qx "persistentvolume/$name" <<<"$have"; then
			continue
		fi
		k create -f - >/dev/null <<-EOF
			apiVersion: v1
			kind: PersistentVolume
			metadata:
			  name: $name
			  labels: {app.kubernetes.io/managed-by: tuxlab-kube-up}
			spec:
			  storageClassName: $STORAGE_CLASS
			  capacity: {storage: 10Gi}
			  accessModes: [ReadWriteOnce]
			  persistentVolumeReclaimPolicy: Delete
			  hostPath: {path: $PV_DIR/$name, type: DirectoryOrCreate}
		EOF
		made=$((made + 1))
	done
	say "storage class $STORAGE_CLASS: $made of $PV_POOL volumes made (in $PV_DIR)"
}

# forward_bridge lets pods reach each other across the CNI bridge: Docker
# sets the FORWARD policy to DROP, and bridged packets pass iptables
# (br_netfilter). Traffic out of the bridge stays dropped (and ipMasq is off),
# so pods reach each other and the host, not beyond.
forward_bridge() {
	command -v iptables >/dev/null || return 0
	if ! iptables -w -C FORWARD -i tuxlab-cni0 -o tuxlab-cni0 -j ACCEPT 2>/dev/null; then
		iptables -w -I FORWARD 1 -i tuxlab-cni0 -o tuxlab-cni0 -j ACCEPT
	fi
}

node_ready() {
	[ "$(k get node localhost -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# pause_image builds the pod sandbox's pause image (registry.k8s.io cannot be
# reached) from the static binary built with the others.
pause_image() {
	if docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1 &&
		[ "$(docker image inspect -f '{{index .Config.Labels "org.tuxlab.pause"}}' "$PAUSE_IMAGE")" = "$BIN" ]; then
		return
	fi
	say "building $PAUSE_IMAGE"
	local d
	d=$(mktemp -d)
	cp "$BIN/pause" "$d/pause"
	printf 'FROM scratch\nCOPY pause /pause\nLABEL org.tuxlab.pause=%s\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' "$BIN" >"$d/Dockerfile"
	DOCKER_BUILDKIT=0 docker build -q -t "$PAUSE_IMAGE" "$d" >/dev/null 2>&1 || die "docker build of $PAUSE_IMAGE failed"
	rm -rf "$d"
}

# import_images copies the pause, tools and sandbox images from Docker into
# the cluster's containerd, again when Docker's image id changed.
import_images() {
	pause_image
	local img id file
	mkdir -p "$STATE/images"
	for img in "$PAUSE_IMAGE" "$TOOLS_IMAGE" $IMAGES; do
		id=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) || die "image $img is not in Docker: build it (./scripts/build-images.sh)"
		file=$STATE/images/$(printf '%s' "$img" | tr '/:' '__')
		if [ "$(cat "$file" 2>/dev/null)" = "$id" ] && ctr -a "$SOCK" -n k8s.io images ls -q | grep -qF "${img#localhost/}"; then
			continue
		fi
		say "importing $img into the cluster's containerd"
		docker save "$img" | ctr -a "$SOCK" -n k8s.io images import - >/dev/null
		echo "$id" >"$file"
	done
}

# down stops every component, the pods' containers first, and leaves the
# state (etcd's data, images) for the next start.
down() {
	local name pid task shims
	if running containerd; then
		say "stopping the pods' containers"
		if running kubelet; then
			kill "$(cat "$STATE/run/kubelet.pid")" 2>/dev/null || true
		fi
		for task in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
			ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true
		done
		sleep 1
		for task in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
			ctr -a "$SOCK" -n k8s.io tasks delete -f "$task" >/dev/null 2>&1 || true
		done
	fi
	for name in kube-controller-manager kube-scheduler kubelet kube-apiserver containerd etcd; do
		if running "$name"; then
			pid=$(cat "$STATE/run/$name.pid")
			say "stopping $name ($pid)"
			kill "$pid" 2>/dev/null || true
			for _ in $(seq 40); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.25
			done
			kill -9 "$pid" 2>/dev/null || true
		fi
		rm -f "$STATE/run/$name.pid"
	done
	# The shims of the cluster's containerd name its socket; Docker's are left alone.
	shims=$(pgrep -f -- "-address $SOCK" || true)
	if [ -n "$shims" ]; then
		say "stopping containerd shims: $shims"
		# shellcheck disable=SC2086 # one pid a word
		kill -9 $shims 2>/dev/null || true
	fi
	findmnt -rn -o TARGET | grep "^$STATE/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	ip link delete tuxlab-cni0 2>/dev/null || true
	iptables -w -D FORWARD -i tuxlab-cni0 -o tuxlab-cni0 -j ACCEPT 2>/dev/null || true
	say "cluster stopped (state kept in $STATE)"
}

main() {
	case "${1:-}" in
	--build-only) ensure_bins; echo "$BIN" ;;
	--down) down ;;
	"")
		local started
		started=$(date +%s)
		ensure_packages
		ensure_bins
		start_all
		say "cluster up in $(($(date +%s) - started)) s (namespace $NAMESPACE; kubectl --kubeconfig $KUBECONFIG_ADMIN)"
		echo "$KUBECONFIG_ADMIN"
		;;
	*) die "usage: $0 [--down|--build-only]" ;;
	esac
}

main "$@"
