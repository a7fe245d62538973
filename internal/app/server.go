package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"tollgate/internal/billing"
	"tollgate/internal/config"
	"tollgate/internal/db"
)

// shutdownGrace is how long in-flight requests get to finish after SIGINT or SIGTERM.
const shutdownGrace = 25 * time.Second

// Server is tollgate's HTTP surface with everything it depends on.
type Server struct {
	cfg      config.Config
	env      env
	db       *db.DB
	billing  *billing.Service
	registry *prometheus.Registry
	metrics  *httpMetrics
}

// NewServer wires a server over an open, migrated database.
func NewServer(e env, d *db.DB) *Server {
	registry := prometheus.NewRegistry()
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(d.DB, "tollgate"),
	)
	return &Server{
		cfg: e.cfg, env: e, db: d, registry: registry,
		billing: newBilling(d, e, registry),
		metrics: newHTTPMetrics(registry),
	}
}

func newBilling(d *db.DB, e env, reg prometheus.Registerer) *billing.Service {
	return billing.New(d, e.log, billing.Options{
		WebSecret: e.cfg.WebWebhookSecret, MobileSecret: e.cfg.MobileWebhookSecret, MaxBody: e.cfg.WebhookMaxBody,
		MobileAliases: e.cfg.MobileEventAliases, MountWebWebhook: e.cfg.WebIngestion == config.IngestWebhook,
		Registerer: reg,
	})
}

func serve(ctx context.Context, e env) error {
	d, err := openDB(ctx, e, e.cfg.AutoMigrate)
	if err != nil {
		return err
	}
	defer d.Close()
	srv := NewServer(e, d)
	if e.cfg.Env == config.Development {
		srv.syncDevPlans(ctx)
	}
	listener, err := net.Listen("tcp", e.cfg.Addr)
	if err != nil {
		return err
	}
	return srv.Serve(ctx, listener)
}

// syncDevPlans keeps a development database in step with the sample plans file, so the
// single run command gives a working setup. Production runs "tollgate plans sync" itself.
func (s *Server) syncDevPlans(ctx context.Context) {
	if _, err := os.Stat(s.cfg.PlansFile); err != nil {
		return
	}
	plans, err := billing.LoadPlans(s.cfg.PlansFile)
	if err == nil {
		var changes []string
		changes, err = s.billing.SyncPlans(ctx, plans)
		for _, c := range changes {
			s.env.log.Info("plans sync", "change", c)
		}
	}
	if err != nil {
		s.env.log.Warn("plans file not synced", "error", err)
	}
}

// Serve answers on listener until ctx ends, then shuts down gracefully: it stops accepting,
// and in-flight requests (a webhook mid-transaction, say) get shutdownGrace to finish.
func (s *Server) Serve(ctx context.Context, listener net.Listener) error {
	httpServer := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- httpServer.Serve(listener) }()
	s.env.log.Info("tollgate listening", "addr", listener.Addr().String(), "env", s.cfg.Env, "database", string(s.db.Engine),
		"web_ingestion", s.cfg.WebIngestion)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.env.log.Info("shutting down: finishing in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
