package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// HistoryReader reads the page of a provider's history that page names ("" for the first).
type HistoryReader func(ctx context.Context, page string) (billing.HistoryPage, error)

// CatchUpSummary is what a catch-up did: pages read, events read, applied (not stored
// before), already stored (left untouched), refused (did not verify).
type CatchUpSummary struct {
	Pages, Read, Applied, Stored, Refused int
}

// CatchUpOptions: DryRun applies nothing; Report is told each event's id and outcome;
// Progress, when set, the summary so far after each page read and each event applied.
type CatchUpOptions struct {
	DryRun   bool
	Report   func(id, outcome string)
	Progress func(CatchUpSummary)
}

// CatchUp reads a provider's whole history and processes every event in it that tollgate
// has not stored, in the order the provider signed them, exactly as if it had been
// delivered: stored under its own id, ordered, with the unresolved rule intact. An event
// already stored is skipped and its row left as it is: a copy read back is no redelivery.
// Each event's outcome is reported (OutcomeDuplicate for one already stored); in a dry run
// nothing is applied and each new event is reported as "would apply".
func (p *Pipeline) CatchUp(ctx context.Context, provider string, read HistoryReader, opts CatchUpOptions) (CatchUpSummary, error) {
	report, progress := opts.Report, opts.Progress
	if report == nil {
		report = func(string, string) {}
	}
	if progress == nil {
		progress = func(CatchUpSummary) {}
	}
	var sum CatchUpSummary
	var events []billing.HistoryEvent
	for page := ""; ; {
		h, err := read(ctx, page)
		if err != nil {
			return sum, err
		}
		sum.Pages++
		sum.Refused += len(h.Refused)
		for _, err := range h.Refused {
			p.log.WarnContext(ctx, "a history item refused", "provider", provider, "error", err.Error())
		}
		events = append(events, h.Events...)
		sum.Read = len(events)
		progress(sum)
		if page = h.Next; page == "" {
			break
		}
	}
	sum.Read = len(events)
	slices.SortStableFunc(events, func(a, b billing.HistoryEvent) int { return a.At.Compare(b.At) })
	for _, e := range events {
		id, outcome, err := p.recoverOne(ctx, provider, e.Body, opts.DryRun)
		if err != nil {
			return sum, err
		}
		switch outcome {
		case billing.OutcomeDuplicate:
			sum.Stored++
		case answered:
		default:
			sum.Applied++
		}
		report(id, outcome)
		progress(sum)
	}
	return sum, nil
}

// answered is the outcome of a history event that a delivery would have had answered
// without recording it.
const answered = "answered"

// recoverOne processes one verified body unless its event is stored.
func (p *Pipeline) recoverOne(ctx context.Context, provider string, body []byte, dryRun bool) (string, string, error) {
	a, ok := p.adapters[provider]
	if !ok {
		return "", "", fmt.Errorf("no adapter for provider %q", provider)
	}
	body, err := billing.StorableJSON(body)
	if err != nil {
		return "", "", err
	}
	ev, err := a.Parse(body)
	if err != nil {
		return "", "", err
	}
	if ev.Answer != nil { // a set-up probe, or an environment not applied here: nothing to store
		return ev.ID, answered, nil
	}
	_, err = dbq.New(p.db).GetProviderEvent(ctx, dbq.GetProviderEventParams{Provider: provider, ProviderEventID: ev.ID})
	switch {
	case err == nil:
		return ev.ID, billing.OutcomeDuplicate, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", "", err
	case dryRun:
		return ev.ID, "would apply", nil
	}
	done, err := p.Ingest(ctx, provider, ev, body)
	if err != nil {
		return "", "", err
	}
	return ev.ID, done.Outcome, nil
}
