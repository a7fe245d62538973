package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/grants"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// grantRow is one of a customer's grants as the page lists it.
type grantRow struct {
	billing.Grant
	Status string
	End    time.Time
}

// grantForm is the customer page's Grant form: the plans it offers and what was typed.
type grantForm struct {
	Plans             []planOption
	Plan, For, Reason string
}

type planOption struct{ Key, Name string }

// grantsOf is userID's grants, newest first, and the plans a grant may give (the live
// ones, lowest tier first).
func (c *Console) grantsOf(ctx context.Context, userID string) ([]grantRow, []planOption, error) {
	list, err := c.opts.Grants.List(ctx, userID)
	if err != nil {
		return nil, nil, err
	}
	now := c.now()
	rows := make([]grantRow, 0, len(list))
	for _, g := range list {
		rows = append(rows, grantRow{Grant: g, Status: g.Status(now), End: g.End()})
	}
	all, err := dbq.New(c.opts.DB).ListPlans(ctx)
	if err != nil {
		return nil, nil, err
	}
	var live []planOption
	for _, p := range all {
		if !p.ArchivedAt.Valid {
			live = append(live, planOption{Key: p.Key, Name: p.Name})
		}
	}
	return rows, live, nil
}

// addGrant is POST /admin/customers/{user_id}/grants: the Grant form (plan, for,
// reason), on the operator's word. What cannot be granted shows the page again, 422,
// with why and what was typed.
func (c *Console) addGrant(w http.ResponseWriter, r *http.Request) {
	userID := strings.ToLower(r.PathValue("user_id"))
	if !billing.IsUUID(userID) {
		c.fail(w, r, errNoSuchThing)
		return
	}
	form := grantForm{Plan: r.PostFormValue("plan"), For: strings.TrimSpace(r.PostFormValue("for")), Reason: r.PostFormValue("reason")}
	req := grants.Request{UserID: userID, Plan: form.Plan, Reason: form.Reason, By: c.operatorEmail(r.Context())}
	var err error
	if req.For, err = billing.ParseDuration(form.For); err != nil {
		err = billing.ErrGrantDuration
	} else {
		var made billing.Grant
		made, err = c.opts.Grants.Add(r.Context(), req)
		c.logAction(r.Context(), "grant", made.ID, err)
	}
	c.answerGrantAction(w, r, userID, form, err, "granted")
}

// revokeGrant is POST /admin/customers/{user_id}/grants/{grant_id}/revoke: the Revoke
// form of an active grant, with its reason.
func (c *Console) revokeGrant(w http.ResponseWriter, r *http.Request) {
	userID := strings.ToLower(r.PathValue("user_id"))
	id := r.PathValue("grant_id")
	_, err := c.opts.Grants.Revoke(r.Context(), userID, id, r.PostFormValue("reason"), c.operatorEmail(r.Context()))
	c.logAction(r.Context(), "revoke", id, err)
	c.answerGrantAction(w, r, userID, grantForm{For: "30d"}, err, "revoked")
}

// answerGrantAction sends the operator back to the customer page, saying done, or
// shows the page again with why the action was refused.
func (c *Console) answerGrantAction(w http.ResponseWriter, r *http.Request, userID string, form grantForm, err error, done string) {
	status := map[billing.Kind]int{billing.KindInvalid: http.StatusUnprocessableEntity, billing.KindConflict: http.StatusConflict}[billing.KindOf(err)]
	be := billing.AsError(err)
	switch {
	case err == nil:
		http.Redirect(w, r, "/admin/customers/"+url.PathEscape(userID)+"?done="+done+"#grants", http.StatusSeeOther)
		return
	case be == nil || status == 0:
		c.fail(w, r, err)
		return
	}
	data, err := c.customerPage(r.Context(), userID, 1, form)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, status, "customer", page{Title: "Customer", Section: "customers", Alert: be.Detail, Data: data})
}

// operatorEmail is the signed-in operator's e-mail: who a grant's record names.
func (c *Console) operatorEmail(ctx context.Context) string {
	if op := operatorOf(ctx); op != nil {
		return op.Email
	}
	return ""
}

// logAction writes an operator's grant or revocation to the log; the audit log's record
// is the grants' own.
func (c *Console) logAction(ctx context.Context, action, grantID string, err error) {
	result := "ok"
	if err != nil {
		result = "refused or failed"
	}
	c.opts.Log.InfoContext(ctx, "console action", "operator", c.operatorEmail(ctx), "action", action, "grant_id", grantID, "result", result)
}
