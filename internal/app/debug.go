package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugHandler serves the runtime profiles of net/http/pprof under /debug/pprof/.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// serveDebug serves the profiles on addr (TUXLAB_DEBUG_ADDR, loopback only,
// checked by config.Load) until ctx ends. It is off unless configured: a
// profile shows memory contents and costs CPU while it is taken.
func (a *App) serveDebug(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug listener on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: debugHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	a.Log.Info("serving profiles", "addr", ln.Addr().String(), "path", "/debug/pprof/")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.Log.Error("debug listener stopped", "error", err.Error())
		}
	}()
	return nil
}
