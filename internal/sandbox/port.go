package sandbox

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"tuxlab/internal/errs"
)

// Limits of port connections (DialPort): what a preview or a port-forward may
// hold open in one sandbox, and how long one connection may live.
const (
	// MaxPortConns is how many connections to a sandbox's ports may be open
	// at once, all ports together: each is a process in the sandbox, which
	// counts against its pid limit.
	MaxPortConns = 16
	// PortConnLifetime is the longest a connection lives: the trusted
	// timeout kills its relay in the sandbox then, whatever happens.
	PortConnLifetime = time.Hour
)

// Errors of port connections.
var (
	ErrBadPort   = errs.Field([]any{"port"}, "Input should be a TCP port from 1 to 65535", "int_range")
	ErrPortsBusy = &errs.Error{Kind: errs.TooManyRequests, RetryAfter: 5 * time.Second, Detail: "Too many connections to this sandbox's ports are open: close some and try again"}
)

// portRelay is the trusted command that connects to 127.0.0.1:$1 inside the
// sandbox's network namespace and pipes its standard input and output to
// it: BusyBox's nc on the read-only tools mount (never a program of the
// sandbox's own, which root there could replace), under the trusted timeout
// ($0 seconds). Its error output is dropped, so the stream carries only the
// connection's bytes; a port nothing listens on ends the stream at once.
// BusyBox's nc half-closes the connection when its input ends, and exits
// when the service closes its side.
const portRelay = `[ -x ` + toolsBin + `/nc ] || exit 127
exec ` + trustedTimeout + ` -s KILL "$0" ` + toolsBin + `/nc 127.0.0.1 "$1" 2>/dev/null`

// DialPort opens a TCP connection to port on the loopback interface of
// sandbox c, which the caller got from Get (so ownership is checked): one
// exec of the trusted relay per connection, through the engine, so the
// sandbox's network stays as closed as its template says (none at all for
// most). c must be a running container (ErrNotRunning; a machine is
// ErrUnsupported); port from 1 to 65535 (ErrBadPort). At most MaxPortConns
// are open per sandbox (ErrPortsBusy); closing the connection frees its
// place. A port nothing listens on is a connection that ends at once (EOF).
func (s *Service) DialPort(ctx context.Context, c *Container, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, ErrBadPort
	}
	if c.Status != StatusRunning {
		return nil, ErrNotRunning
	}
	if c.Kind == KindMachine {
		return nil, ErrUnsupported
	}
	t, err := s.store.FindTemplateByID(ctx, c.TemplateID)
	if err != nil {
		return nil, err
	}
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, err
	}
	release, err := s.takePortSlot(c.ID)
	if err != nil {
		return nil, err
	}
	secs := strconv.Itoa(int(PortConnLifetime / time.Second))
	sess, err := rt.Exec(ctx, c.EngineID, ExecSpec{Cmd: []string{trustedSh, "-c", portRelay, secs, strconv.Itoa(port)},
		User: t.User, Env: []string{"PATH=" + toolsBin}})
	if err != nil {
		release()
		return nil, err
	}
	if _, err := s.Touch(ctx, c.ID); err != nil && !errors.Is(err, ErrContainerNotFound) {
		s.opt.Log.Warn("recording a sandbox's activity", "container_id", c.ID, "error", err.Error())
	}
	return &portConn{Session: sess, release: release, port: port}, nil
}

// takePortSlot reserves one of sandbox id's MaxPortConns places, and returns
// the function that frees it.
func (s *Service) takePortSlot(id int64) (func(), error) {
	s.portsMu.Lock()
	defer s.portsMu.Unlock()
	if s.ports == nil {
		s.ports = map[int64]int{}
	}
	if s.ports[id] >= MaxPortConns {
		return nil, ErrPortsBusy
	}
	s.ports[id]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.portsMu.Lock()
			defer s.portsMu.Unlock()
			if s.ports[id]--; s.ports[id] <= 0 {
				delete(s.ports, id)
			}
		})
	}, nil
}

// portConn is a connection to a sandbox's port: the relay's exec stream. It
// has no deadlines (the relay's lifetime bounds it) and no real addresses.
type portConn struct {
	Session
	release func()
	port    int
}

// Close ends the stream and frees the connection's place; the relay sees
// its input end and exits once the service closes its side, or at its
// lifetime.
func (p *portConn) Close() error {
	err := p.Session.Close()
	p.release()
	return err
}

func (p *portConn) LocalAddr() net.Addr { return portAddr(0) }
func (p *portConn) RemoteAddr() net.Addr {
	return portAddr(p.port)
}
func (p *portConn) SetDeadline(time.Time) error      { return nil }
func (p *portConn) SetReadDeadline(time.Time) error  { return nil }
func (p *portConn) SetWriteDeadline(time.Time) error { return nil }

// portAddr is the sandbox's loopback address at a port, as a net.Addr.
type portAddr int

func (a portAddr) Network() string { return "tcp" }
func (a portAddr) String() string  { return "127.0.0.1:" + strconv.Itoa(int(a)) }
