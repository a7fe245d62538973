package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tollgate/tollgate/internal/api"
	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/playstore/playdev"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/billing/reconcile"
	"github.com/tollgate/tollgate/internal/billing/retention"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/console"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/devidentity"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/knownusers"
	"github.com/tollgate/tollgate/internal/outbound"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/servicekeys"
	"github.com/tollgate/tollgate/internal/web"
)

// Server is tollgate's HTTP surface with everything it depends on.
type Server struct {
	cfg     config.Config
	env     env
	db      *db.DB
	billing *billingParts
	keys    *api.KeySet
	// serviceKeys checks the service API's keys, kept in memory while serve listens for
	// revocations.
	serviceKeys *servicekeys.Keys
	throttles   *ratelimit.Throttles
	api         *api.API
	web         *web.Web
	// reconciler keeps billing in step with the web provider's API; nil unless
	// RECONCILE_INTERVAL and WEB_API_KEY are set.
	reconciler *reconcile.Reconciler
	// stores read the App Store's and Google Play's own APIs, each where its API settings
	// are set: what they sent that tollgate missed, and the state of what it knows.
	stores []*storeSync
	// console is the operator console; nil unless ADMIN_EMAILS is set (with the forms).
	console  *console.Console
	registry *prometheus.Registry
	metrics  *httpMetrics
	// deliverer sends outbound webhooks; nil unless OUTBOUND_WEBHOOK_URL is set.
	deliverer *outbound.Deliverer
	// devIdentity is the development identity service; nil unless config.DevIdentity.
	devIdentity *devidentity.Service
	// devPlay is the development stand-in for Google Play; nil unless PlayStore.Dev.
	devPlay *playdev.Google
	// held are the entitlement tokens, their keys, and the access token hook.
	held *heldParts
}

// NewServer wires a server over an open, migrated database.
func NewServer(ctx context.Context, e env, d *db.DB) (*Server, error) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(d.DB, "tollgate"),
	)
	d.WatchRequests(e.cfg.DBTimeout, e.log, registry)
	throttles, err := ratelimit.New(ratelimit.Options{
		RedisURL: e.cfg.RedisURL, TrustedProxies: e.cfg.TrustedProxies, Log: e.log, Registerer: registry,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: e.cfg, env: e, db: d, registry: registry, throttles: throttles,
		metrics: newHTTPMetrics(registry),
	}
	if s.billing, err = newBilling(d, e, registry); err != nil {
		throttles.Close()
		return nil, err
	}
	s.held = newHeldAnswers(d, e, s.billing.reader, registry)
	// The identity service: the configured one over the network, or the development one
	// answered in-process (its tokens carry the tollgate claim, as the hook adds it).
	var identityClient *http.Client
	if e.cfg.DevIdentity {
		if s.devIdentity, err = devidentity.New(ctx, d, e.cfg.AuthURL, e.log, s.held.hook.Customize); err != nil {
			return nil, err
		}
		identityClient = s.devIdentity.Client()
	}
	if play := e.cfg.PlayStore; play.Dev {
		if s.devPlay, err = playdev.New(playdev.Config{Audience: play.PushAudience, ServiceAccount: play.PushServiceAccount}); err != nil {
			return nil, err
		}
	}
	s.keys = api.NewKeySet(e.cfg.AuthJWKSURL, api.KeySetOptions{Client: identityClient, Log: e.log, Registerer: registry})
	users := knownusers.New(d, e.log)
	s.serviceKeys = servicekeys.New(d)
	s.api = api.New(api.Options{
		Users:       users,
		Billing:     s.billing.reader,
		Checkout:    s.billing.checkout,
		Purchases:   s.billing.pipeline,
		Grants:      s.billing.grants,
		HeldAnswers: s.held.issuer,
		Keys:        s.serviceKeys,
		Verifier:    api.NewVerifier(s.keys, api.VerifierOptions{Issuer: e.cfg.AuthJWTIssuer, Audience: e.cfg.AuthJWTAudience, HS256Secret: e.cfg.AuthJWTSecret}),
		Throttles:   throttles,
		// In development any localhost origin may call the API until CORS_ORIGINS says
		// otherwise; elsewhere nothing is allowed until it is set.
		CORS:      api.CORS{Origins: e.cfg.CORSOrigins, AnyLocalhost: e.cfg.Env == config.Development && len(e.cfg.CORSOrigins) == 0},
		SwaggerUI: e.cfg.SwaggerUIEnabled,
		Log:       e.log,
	})
	webOpts := web.Options{
		DB: d, Identity: identity.New(e.cfg.AuthURL, e.cfg.AuthAPIKey, identityClient), Billing: s.billing.reader, Checkout: s.billing.checkout, Throttles: throttles,
		PublicURL: e.cfg.PublicURL, OAuthProviders: e.cfg.OAuthProviders, SecureCookies: e.cfg.Env != config.Development,
		Brand:        web.Brand{AppName: e.cfg.AppName, Color: e.cfg.BrandColor, LogoURL: e.cfg.BrandLogoURL, TemplatesDir: e.cfg.TemplatesDir},
		DevIdentity:  e.cfg.DevIdentity,
		BillingMount: e.cfg.BillingMount,
		Users:        users,
		Log:          e.log,
	}
	if e.cfg.OutboundWebhookURL != "" {
		s.deliverer = outbound.New(d, outbound.Options{URL: e.cfg.OutboundWebhookURL, Key: e.cfg.OutboundWebhookSecret, Timeout: e.cfg.OutboundWebhookTimeout, DBTimeout: e.cfg.DBTimeout, Log: e.log, Registerer: registry})
		s.billing.pipeline.OnBillingChange(func(context.Context, string) { s.deliverer.Wake() })
	}
	if e.cfg.WebAPIKey != "" {
		webOpts.CheckoutPages = stripe.PageOrigins(e.cfg.WebAPIBase)
	}
	s.web, err = web.New(webOpts)
	if err != nil {
		return nil, err
	}
	if s.console, err = s.newConsole(); err != nil {
		return nil, err
	}
	if _, web := s.billing.pipeline.Adapter(billing.ProviderWeb); web && e.cfg.Reconcile.Interval > 0 && e.cfg.WebAPIKey != "" {
		s.reconciler = newReconciler(d, e, s.billing, registry)
	}
	if s.stores, err = storeSyncs(d, e, s.billing, registry); err != nil {
		return nil, err
	}
	return s, nil
}

// Open prepares a server for a program built on tollgate, as "tollgate serve" does: the
// configuration through getenv (with .env.development in development), logs to logs, the
// database opened and, unless AUTO_MIGRATE=false, migrated. Add operations to API, then
// ListenAndServe.
func Open(ctx context.Context, getenv func(string) string, logs io.Writer) (*Server, error) {
	getenv, cfg, looked, err := loadConfig(getenv)
	if err != nil {
		return nil, err
	}
	return start(ctx, env{cfg: cfg, getenv: getenv, log: newLogger(cfg, logs), stdout: logs, stderr: logs, devEnvLooked: looked})
}

// start opens what a server needs: the configuration checked, the database, migrated
// when AUTO_MIGRATE is on, and in development the sample plans synced. It logs what the
// server will lack (startupWarnings).
func start(ctx context.Context, e env) (*Server, error) {
	warnings, err := e.cfg.ServeProblems()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w%s", err, devEnvMissing(e.devEnvLooked))
	}
	d, err := openDB(ctx, e, e.cfg.AutoMigrate)
	if err != nil {
		return nil, err
	}
	plans, plansErr := plans.LoadPlans(e.cfg.PlansFile)
	if plansErr != nil && e.cfg.Env == config.Production {
		// In production a plans file that cannot be read would leave every paid event
		// unresolved: stop, naming the file, the line and the key (LoadPlans says them).
		d.Close()
		return nil, fmt.Errorf("PLANS_FILE: %w", plansErr)
	}
	srv, err := NewServer(ctx, e, d)
	if err != nil {
		d.Close()
		return nil, err
	}
	if e.cfg.Env == config.Development && plansErr == nil {
		srv.syncDevPlans(ctx, plans)
	}
	for _, w := range append(warnings, startupWarnings(e, plans, plansErr)...) {
		e.log.Warn(w)
	}
	return srv, nil
}

// API is the /api/v1 API, for operations a program adds.
func (s *Server) API() huma.API { return s.api.Huma() }

// Billing answers billing questions: entitlements and usage.
func (s *Server) Billing() *reader.Reader { return s.billing.reader }

// OnBillingChange registers fn, called with a user's id after a change of their billing
// answer commits (see pipeline.Pipeline.OnBillingChange).
func (s *Server) OnBillingChange(fn func(ctx context.Context, userID string)) {
	s.billing.pipeline.OnBillingChange(fn)
}

// Close releases the database and Redis, for a server that will not serve (a test of its
// Handler); ListenAndServe releases them itself.
func (s *Server) Close() error {
	s.throttles.Close()
	return s.db.Close()
}

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

// syncDevPlans keeps a development database in step with the sample plans file, so the
// single run command gives a working setup. Production runs "tollgate plans sync" itself.
func (s *Server) syncDevPlans(ctx context.Context, list []plans.PlanConfig) {
	changes, err := s.billing.syncPlans(ctx, s.db, list)
	for _, c := range changes {
		s.env.log.Info("plans sync", "change", c)
	}
	if err != nil {
		s.env.log.Warn("plans file not synced", "error", err)
	}
}

// Serve answers on listener until ctx ends, then shuts down gracefully: it stops accepting,
// and in-flight requests (a webhook mid-transaction, say) get SHUTDOWN_TIMEOUT to finish.
func (s *Server) Serve(ctx context.Context, listener net.Listener) error {
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
		// Metrics on their own listener, off the public port (METRICS_ADDR), bound before
		// anything is served so that a taken port stops the start.
		metricsListener, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", s.metricsHandler())
		servers = append(servers, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second})
		listeners = append(listeners, metricsListener)
		s.env.log.Info("metrics listening", "addr", metricsListener.Addr().String())
	}
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
		if s.reconciler != nil {
			each.Go(func() { s.reconciler.Run(ctx, s.cfg.Reconcile.Interval) })
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
	if s.devIdentity != nil {
		s.env.log.Warn("development identity service on "+s.cfg.AuthURL+": anyone who reaches it can sign in as any e-mail; "+
			"e-mails are printed here, not sent. Set AUTH_URL to use a real identity service", "users_and_keys", "in the database")
	}
	if s.cfg.AppStore.BundleID != "" && !s.cfg.AppStore.APIOn() {
		s.env.log.Info("App Store Server API off: notifications missed while tollgate was away are not caught up. " +
			"Set APPSTORE_KEY_ID, APPSTORE_ISSUER_ID and APPSTORE_PRIVATE_KEY_FILE to read Apple's notification history")
	}
	if s.devPlay != nil {
		s.env.log.Warn("Google Play through the development stand-in on " + s.cfg.PublicURL + config.DevPlayPath +
			": no Google account needed; try it with tollgate webhook send --provider playstore. Set PLAY_PACKAGE_NAME to hear Google")
	}
	s.env.log.Info("tollgate is running", "url", localURL(listener.Addr()), "public_url", s.cfg.PublicURL, "env", s.cfg.Env,
		"database", db.Describe(s.cfg.DatabaseURL), "web_ingestion", s.cfg.WebIngestion, "forms", onOff(s.cfg.Forms), "api", onOff(s.cfg.API),
		"providers", s.providersOn(), "console", onOff(s.console != nil), "reconcile", s.reconcileSetting(),
		"outbound_webhooks", onOff(s.cfg.OutboundWebhookURL != ""), "access_token_hook", onOff(len(s.cfg.HeldAnswers.HookSecrets) > 0))
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
	for _, done := range []chan struct{}{delivering, reconciling} {
		select {
		case <-done:
		case <-shutdownCtx.Done():
		}
	}
	return nil
}

func syncEngineSchema(cfg config.Config) string {
	if cfg.WebIngestion == config.IngestSyncEngine {
		return cfg.SyncEngineSchema
	}
	return ""
}
