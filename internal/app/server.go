package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tollgate/tollgate/internal/api"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/reader"
	"github.com/tollgate/tollgate/internal/config"
	"github.com/tollgate/tollgate/internal/console"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/devidentity"
	"github.com/tollgate/tollgate/internal/identity"
	"github.com/tollgate/tollgate/internal/knownusers"
	"github.com/tollgate/tollgate/internal/outbound"
	"github.com/tollgate/tollgate/internal/ratelimit"
	"github.com/tollgate/tollgate/internal/servicekeys"
	"github.com/tollgate/tollgate/internal/stores"
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
	// stores read the stores' own APIs, each where its API settings are set: what they
	// sent that tollgate missed, and the state of their subscriptions.
	stores []*storeSync
	// console is the operator console; nil unless ADMIN_EMAILS is set (with the forms).
	console  *console.Console
	registry *prometheus.Registry
	metrics  *httpMetrics
	// deliverer sends outbound webhooks; nil unless OUTBOUND_WEBHOOK_URL is set.
	deliverer *outbound.Deliverer
	// devIdentity is the development identity service; nil unless config.DevIdentity.
	devIdentity *devidentity.Service
	// standIns are the development stand-ins for the stores' APIs the configuration asks for.
	standIns []*stores.StandIn
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
	identityClient, err := s.startStandIns(ctx)
	if err != nil {
		return nil, err
	}
	s.keys = api.NewKeySet(e.cfg.AuthJWKSURL, api.KeySetOptions{Client: identityClient, Log: e.log, Registerer: registry})
	users := knownusers.New(d, e.log)
	s.serviceKeys = servicekeys.New(d)
	s.api = api.New(api.Options{
		Users:     users,
		Billing:   s.billing.reader,
		Checkout:  s.billing.checkout,
		Purchases: s.billing.pipeline,
		// Stores whose purchases apps report, as the list names them.
		PurchaseStores: e.stores.Claiming(),
		Grants:         s.billing.grants,
		HeldAnswers:    s.held.issuer,
		Keys:           s.serviceKeys,
		Verifier:       api.NewVerifier(s.keys, api.VerifierOptions{Issuer: e.cfg.AuthJWTIssuer, Audience: e.cfg.AuthJWTAudience, HS256Secret: e.cfg.AuthJWTSecret}),
		Throttles:      throttles,
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
	for _, store := range s.billing.stores {
		if store.Checkout != nil {
			webOpts.CheckoutPages = append(webOpts.CheckoutPages, store.Checkout.PageOrigins()...)
		}
	}
	s.web, err = web.New(webOpts)
	if err != nil {
		return nil, err
	}
	if s.console, err = s.newConsole(); err != nil {
		return nil, err
	}
	if s.stores, err = storeSyncs(d, e, s.billing, registry); err != nil {
		return nil, err
	}
	return s, nil
}

// startStandIns makes the development stand-ins the configuration asks for: the identity
// service, answered in-process (its tokens carry the tollgate claim, as the hook adds it),
// and those of the stores' APIs. It answers the client that reaches the identity service:
// the stand-in's, or nil for the configured one over the network.
func (s *Server) startStandIns(ctx context.Context) (*http.Client, error) {
	var identityClient *http.Client
	var err error
	if s.cfg.DevIdentity {
		if s.devIdentity, err = devidentity.New(ctx, s.db, s.cfg.AuthURL, s.env.log, s.held.hook.Customize); err != nil {
			return nil, err
		}
		identityClient = s.devIdentity.Client()
	}
	for _, store := range s.env.stores {
		if store.StandIn == nil || !store.On(s.cfg) {
			continue
		}
		kept, err := s.keptFor(ctx, store.Name)
		if err != nil {
			return nil, err
		}
		standIn, err := store.StandIn(s.cfg, kept)
		if err != nil {
			return nil, err
		}
		if standIn != nil {
			s.standIns = append(s.standIns, standIn)
		}
	}
	return identityClient, nil
}

// keptFor is where the development stand-in of the store name keeps what it was told: a
// row of dev_standins, so that a serve restarted in development remembers every purchase.
// A save that fails is logged, not fatal: the stand-in still answers from memory.
func (s *Server) keptFor(ctx context.Context, name string) (stores.Kept, error) {
	q := dbq.New(s.db)
	saved, err := q.DevStandInState(ctx, name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return stores.Kept{}, err
	}
	return stores.Kept{Saved: []byte(saved), Save: func(state []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := q.SaveDevStandInState(ctx, dbq.SaveDevStandInStateParams{Name: name, State: string(state), Now: time.Now().UTC()}); err != nil {
			s.env.log.Warn("the development stand-in could not keep what it was told", "store", name, "error", err)
		}
	}}, nil
}

// Open prepares a server for a program built on tollgate, as "tollgate serve" does: the
// configuration through getenv (with .env.development in development), logs to logs, the
// database opened and, unless AUTO_MIGRATE=false, migrated. Add operations to API, then
// ListenAndServe.
func Open(ctx context.Context, getenv func(string) string, logs io.Writer) (*Server, error) {
	e := env{stores: stores.All(), getenv: getenv, environ: processEnviron(getenv), stdout: logs, stderr: logs}
	if err := loadConfig(&e); err != nil {
		return nil, err
	}
	return start(ctx, e)
}

// start opens what a server needs: the configuration checked, the database, migrated
// when AUTO_MIGRATE is on, and in development the sample plans synced. It logs what the
// server will lack (startupWarnings).
func start(ctx context.Context, e env) (*Server, error) {
	warnings, err := e.cfg.ServeProblems()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w%s", err, devEnvMissing(e.devEnvLooked))
	}
	d, err := openMigrating(ctx, e, e.cfg.AutoMigrate)
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

func syncEngineSchema(cfg config.Config) string {
	if cfg.WebIngestion == config.IngestSyncEngine {
		return cfg.SyncEngineSchema
	}
	return ""
}
