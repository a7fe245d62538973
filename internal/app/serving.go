package app

// The server running: its listeners, its background jobs, its start-up lines, its shutdown.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/db"
)

// ListenAndServe listens on ADDR and serves until ctx ends (see Serve), then releases the
// database and Redis.
func (s *Server) ListenAndServe(ctx context.Context) error {
	defer s.Close()
	listener, err := s.listen()
	if err != nil {
		return err
	}
	return s.Serve(ctx, listener)
}

// listen opens ADDR, or takes the listening socket the process was started with (fd 3)
// when LISTEN_FDS says there is one, as systemd's socket activation and tests pass it.
func (s *Server) listen() (net.Listener, error) {
	if !s.cfg.ListenFD {
		listener, err := net.Listen("tcp", s.cfg.Addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("ADDR %s: the port is in use by another program: stop it, or choose another port with PORT (or ADDR)", s.cfg.Addr)
		}
		return listener, err
	}
	f := os.NewFile(3, "LISTEN_FDS socket")
	defer f.Close() // FileListener holds a duplicate
	listener, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("LISTEN_FDS: file descriptor 3 is not a listening socket: %w", err)
	}
	// ADDR was checked for the development identity service; a socket passed in was not.
	if tcp, ok := listener.Addr().(*net.TCPAddr); s.devIdentity != nil && (!ok || !tcp.IP.IsLoopback()) {
		listener.Close()
		return nil, fmt.Errorf("AUTH_URL: is required when the socket passed in (LISTEN_FDS, %s) is not on a loopback address: "+
			"without it tollgate runs a development identity service that signs in any e-mail", listener.Addr())
	}
	return listener, nil
}

// Serve answers on listener until ctx ends, then shuts down gracefully: it stops accepting,
// and in-flight requests (a webhook mid-transaction, say) get SHUTDOWN_TIMEOUT to finish.
func (s *Server) Serve(ctx context.Context, listener net.Listener) error {
	servers, listeners, err := s.servers(listener)
	if err != nil {
		return err
	}
	background := s.runBackground(ctx)
	s.logStart(listener)
	// The listeners are bound already; serving starts once the start-up lines are written, so
	// that whoever sees the server answer finds them in its log.
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.env.log.Info("shutting down: finishing in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return err
		}
	}
	for range servers {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	// Attempts in flight finish, so their outcome is recorded rather than left to the lease;
	// a reconcile pass winds down, records itself as interrupted and releases its lease.
	for _, done := range background {
		select {
		case <-done:
		case <-shutdownCtx.Done():
		}
	}
	return nil
}

// servers are the HTTP servers and their listeners: the public one on listener and, with
// METRICS_ADDR, the metrics one, bound before anything is served so that a taken port
// stops the start.
func (s *Server) servers(listener net.Listener) ([]*http.Server, []net.Listener, error) {
	httpServer := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	servers := []*http.Server{httpServer}
	listeners := []net.Listener{listener}
	if s.cfg.MetricsAddr != "" {
		metricsListener, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			return nil, nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.metricsHandler())
		servers = append(servers, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, metricsListener)
		s.env.log.Info("metrics listening", "addr", metricsListener.Addr().String())
	}
	return servers, listeners, nil
}

// runBackground starts the server's jobs until ctx ends: the key set, sessions' cleanup,
// the console's counts, grants' ends, retention, reconciliation, the listeners for other
// processes' changes and the outbound deliverer. It answers the channels closed once the
// jobs that must wind down on shutdown (deliveries, reconcile passes) have.
func (s *Server) runBackground(ctx context.Context) []chan struct{} {
	if s.cfg.AuthJWKSURL != "" {
		go s.keys.Run(ctx)
	}
	go s.web.RunSessionCleanup(ctx, time.Hour)
	if s.console != nil {
		go s.console.RunSnapshots(ctx, time.Hour)
	}
	reconciling := make(chan struct{})
	go func() {
		defer close(reconciling)
		var each sync.WaitGroup // each provider on its own schedule and lease
		each.Go(func() { s.billing.grants.Run(ctx) })
		if r := s.cfg.Retention; r.Window > 0 {
			pruner := retention.New(s.db, retention.Options{Window: r.Window, Unresolved: r.Unresolved, ArchiveDir: r.ArchiveDir, Log: s.env.log})
			each.Go(func() { pruner.Run(ctx) })
		}
		for _, store := range s.stores {
			each.Go(func() { store.run(ctx, s.env, s.cfg.Reconcile.Interval) })
		}
		each.Wait()
	}()
	go s.billing.reader.ListenForChanges(ctx)
	go s.serviceKeys.ListenForChanges(ctx, s.env.log)
	go s.held.keys.ListenForChanges(ctx, s.env.log)
	delivering := make(chan struct{})
	go func() {
		defer close(delivering)
		if s.deliverer != nil {
			s.deliverer.Run(ctx)
		}
	}()
	return []chan struct{}{delivering, reconciling}
}

// logStart writes the start-up lines: what the server lacks or stands in for, and the one
// line that says it runs, with what is on.
func (s *Server) logStart(listener net.Listener) {
	if s.devIdentity != nil {
		s.env.log.Warn("development identity service on "+s.cfg.AuthURL+": anyone who reaches it can sign in as any e-mail; "+
			"e-mails are printed here, not sent. Set AUTH_URL to use a real identity service", "users_and_keys", "in the database")
	}
	for _, store := range s.billing.stores {
		if store.API != nil && store.API.Off != "" && !store.API.On(s.cfg) {
			s.env.log.Info(store.API.Off)
		}
	}
	for _, standIn := range s.standIns {
		s.env.log.Warn(standIn.Warn)
	}
	s.env.log.Info("tollgate is running", "url", localURL(listener.Addr()), "public_url", s.cfg.PublicURL, "env", s.cfg.Env,
		"database", db.Describe(s.cfg.DatabaseURL), "web_ingestion", s.cfg.WebIngestion, "forms", onOff(s.cfg.Forms), "api", onOff(s.cfg.API),
		"providers", s.providersOn(), "console", onOff(s.console != nil), "reconcile", s.reconcileSetting(),
		"outbound_webhooks", onOff(s.cfg.OutboundWebhookURL != ""), "access_token_hook", onOff(len(s.cfg.HeldAnswers.HookSecrets) > 0))
}
