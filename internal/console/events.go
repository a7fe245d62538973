package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

type eventsData struct {
	Provider, Type, Outcome, Since string
	Providers, Outcomes            []string
	Events                         []eventRow
	Page                           int
	More                           bool
	// Query is the filters as a query string, for the pager's links.
	Query string
}

// outcomes are the filter's choices, as stored.
var outcomes = billing.Outcomes

// events is GET /admin/events: the stored events, unresolved and refused ones first, by
// provider, type, outcome and since when.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	data := eventsData{
		Provider: query.Get("provider"), Type: strings.TrimSpace(query.Get("type")), Outcome: query.Get("outcome"),
		Since: query.Get("since"), Providers: c.providers(), Outcomes: outcomes, Page: pageNumber(r),
	}
	since := time.Time{}
	if data.Since != "" {
		var err error
		if since, err = time.Parse(time.DateOnly, data.Since); err != nil {
			c.fail(w, r, errBadInput)
			return
		}
	}
	rows, err := c.listEvents(r.Context(), dbq.ListProblemEventsParams{
		Provider: data.Provider, EventType: data.Type, Outcome: data.Outcome, Since: since,
		Max: pageSize + 1, Skip: int32((data.Page - 1) * pageSize),
	})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data.More = len(rows) > pageSize
	data.Events = rows[:min(len(rows), pageSize)]
	data.Query = url.Values{"provider": {data.Provider}, "type": {data.Type}, "outcome": {data.Outcome}, "since": {data.Since}}.Encode()
	c.render(w, r, http.StatusOK, "events", page{Title: "Events", Section: "events", Data: data})
}

// eventRow is a row of the events list.
type eventRow = dbq.ListProblemEventsRow

// listEvents is a page of the events the filters in f match: those that need a hand
// first (unresolved or invalid), then the rest, each newest first. Each part is read by
// its own index in time order, so a page costs its rows and its offset, not a sort (or a
// count) of every stored event: the ones that need a hand are counted only when the page
// starts past them, and then only up to its offset.
func (c *Console) listEvents(ctx context.Context, f dbq.ListProblemEventsParams) ([]eventRow, error) {
	q := dbq.New(c.opts.DB)
	rows, err := q.ListProblemEvents(ctx, f)
	if err != nil || len(rows) == int(f.Max) {
		return rows, err
	}
	problems := int64(f.Skip) + int64(len(rows)) // the page holds their last ones
	if len(rows) == 0 && f.Skip > 0 {
		problems, err = q.CountProblemEvents(ctx, dbq.CountProblemEventsParams{
			Provider: f.Provider, EventType: f.EventType, Outcome: f.Outcome, Since: f.Since, UpTo: f.Skip,
		})
		if err != nil {
			return nil, err
		}
	}
	others, err := q.ListOtherEvents(ctx, dbq.ListOtherEventsParams{
		Provider: f.Provider, EventType: f.EventType, Outcome: f.Outcome, Since: f.Since,
		Max: f.Max - int32(len(rows)), Skip: int32(max(0, int64(f.Skip)-problems)),
	})
	for _, o := range others {
		rows = append(rows, eventRow(o))
	}
	return rows, err
}

// providers are the providers tollgate processes, for the filters.
func (c *Console) providers() []string {
	return c.opts.Pipeline.Providers()
}

type eventData struct {
	Event   dbq.GetEventByRowIDRow
	Payload string
}

// event is GET /admin/events/{id}: one stored event with its raw payload, the one page
// that shows a provider's body.
func (c *Console) event(w http.ResponseWriter, r *http.Request) {
	ev, err := c.storedEvent(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, ev.Payload, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(ev.Payload)
	}
	c.render(w, r, http.StatusOK, "event", page{Title: "Event", Section: "events", Data: eventData{Event: ev, Payload: pretty.String()}})
}

// storedEvent is the stored event the path's {id} names: its row's id, a UUID (anything
// else names nothing, rather than an error from a database that types the column).
func (c *Console) storedEvent(r *http.Request) (dbq.GetEventByRowIDRow, error) {
	id := strings.ToLower(r.PathValue("id"))
	if !billing.IsUUID(id) {
		return dbq.GetEventByRowIDRow{}, errNoSuchThing
	}
	return dbq.New(c.opts.DB).GetEventByRowID(r.Context(), id)
}

// replay is POST /admin/events/{id}/replay: the same replay as `tollgate events replay`,
// of this one event, with an audit line naming the operator.
func (c *Console) replay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ev, err := c.storedEvent(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	result := ""
	_, err = c.opts.Pipeline.Replay(ctx, pipeline.ReplayFilter{Provider: ev.Provider, EventID: ev.ProviderEventID},
		func(_, _, outcome string) { result = outcome })
	if err != nil {
		result = "failed"
	}
	c.audit(ctx, "replay", ev.Provider+" "+ev.ProviderEventID, ev.UserID.String, result)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/admin/events/"+url.PathEscape(ev.ID)+"?done=replayed", http.StatusSeeOther)
}
