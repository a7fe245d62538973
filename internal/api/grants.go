package api

import (
	"context"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grants"
)

// Grant is a grant as the service API shows it.
type Grant struct {
	ID     string    `json:"id" doc:"The grant's id."`
	UserID string    `json:"user_id"`
	Plan   string    `json:"plan" doc:"The plan's key in the plans file."`
	Status string    `json:"status" enum:"active,expired" doc:"active until its end; expired once ended or revoked."`
	Starts time.Time `json:"starts_at"`
	Ends   time.Time `json:"ends_at" doc:"When it ends: its end, or when it was revoked."`
	Reason string    `json:"reason"`
	By     string    `json:"granted_by" doc:"Who granted it: an operator's e-mail, key:<service key's name> or cli:<OS user>."`
	// Set once revoked.
	Revoked      *time.Time `json:"revoked_at,omitempty"`
	RevokedBy    string     `json:"revoked_by,omitempty"`
	RevokeReason string     `json:"revoke_reason,omitempty"`
}

func grantOf(g billing.Grant, now time.Time) Grant {
	return Grant{
		ID: g.ID, UserID: g.UserID, Plan: g.Plan, Status: g.Status(now), Starts: g.Starts, Ends: g.End(), Reason: g.Reason, By: g.By,
		Revoked: g.Revoked, RevokedBy: g.RevokedBy, RevokeReason: g.RevokeReason,
	}
}

type grantInput struct {
	UserID string `path:"user_id" format:"uuid" doc:"The identity user's id (the sub of their tokens)."`
	Body   struct {
		Plan     string     `json:"plan" minLength:"1" maxLength:"100" doc:"The plan's key in the plans file, e.g. pro."`
		Until    *time.Time `json:"until,omitempty" required:"false" doc:"When the grant ends (RFC 3339). Give this or duration."`
		Duration string     `json:"duration,omitempty" required:"false" maxLength:"32" doc:"How long it lasts from now: 90m, 12h, 30d. Give this or until."`
		Reason   string     `json:"reason" maxLength:"500" doc:"Why: kept with the grant and in the audit log. Required."`
	}
}

type grantOutput struct {
	Status int
	Body   Grant
}

// actor is who acts on the API: the service key, by name.
func actor(ctx context.Context) string {
	if c := credentialOf(ctx); c != nil && c.service != "" {
		return "key:" + c.service
	}
	return "key"
}

func (a *API) addGrant(ctx context.Context, in *grantInput) (*grantOutput, error) {
	r := grants.Request{UserID: in.UserID, Plan: in.Body.Plan, Reason: in.Body.Reason, By: actor(ctx)}
	if in.Body.Until != nil {
		r.Until = *in.Body.Until
	}
	if in.Body.Duration != "" {
		d, err := billing.ParseDuration(in.Body.Duration)
		if err != nil {
			return nil, a.fail(ctx, billing.ErrGrantDuration)
		}
		r.For = d
	}
	made, err := a.opts.Grants.Add(ctx, r)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return &grantOutput{Status: 201, Body: grantOf(made, time.Now())}, nil
}

type grantsOutput struct {
	Body struct {
		Grants []Grant `json:"grants" doc:"The user's grants, newest first."`
	}
}

func (a *API) listGrants(ctx context.Context, in *userPath) (*grantsOutput, error) {
	list, err := a.opts.Grants.List(ctx, in.UserID)
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	out := &grantsOutput{}
	out.Body.Grants = make([]Grant, 0, len(list))
	now := time.Now()
	for _, g := range list {
		out.Body.Grants = append(out.Body.Grants, grantOf(g, now))
	}
	return out, nil
}

type revokeInput struct {
	UserID  string `path:"user_id" format:"uuid" doc:"The identity user's id (the sub of their tokens)."`
	GrantID string `path:"grant_id" maxLength:"64" doc:"The grant's id."`
	Reason  string `query:"reason" maxLength:"500" doc:"Why it is revoked; or send it as {\"reason\": …} in the body."`
	Body    *struct {
		Reason string `json:"reason" maxLength:"500"`
	}
}

func (a *API) revokeGrant(ctx context.Context, in *revokeInput) (*grantOutput, error) {
	reason := in.Reason
	if strings.TrimSpace(reason) == "" && in.Body != nil {
		reason = in.Body.Reason
	}
	ended, err := a.opts.Grants.Revoke(ctx, in.UserID, in.GrantID, reason, actor(ctx))
	if err != nil {
		return nil, a.fail(ctx, err)
	}
	return &grantOutput{Status: 200, Body: grantOf(ended, time.Now())}, nil
}
