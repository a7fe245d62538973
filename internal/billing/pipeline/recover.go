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
// From is the page to begin at ("" the first): where an earlier read stopped. PageDone,
// when set, is told after each page is applied the page that follows it ("" after the
// last), so that a read cut short can resume there; its error ends the read.
type CatchUpOptions struct {
	DryRun   bool
	Report   func(id, outcome string)
	Progress func(CatchUpSummary)
	From     string
	PageDone func(next string) error
}

// CatchUp reads a provider's history page by page and processes every event in it that
// tollgate has not stored, exactly as if it had been delivered: stored under its own id,
// ordered, with the unresolved rule intact. A page is applied before the next is read, in
// the order the provider signed its events (the pipeline's ordering places each among
// events of other pages), so a long history is never held whole. An event already stored
// is skipped and its row left as it is: a copy read back is no redelivery. Each event's
// outcome is reported (OutcomeDuplicate for one already stored); in a dry run nothing is
// applied and each new event is reported as "would apply". A page token met before ends
// the read with billing.ErrHistoryPaging: the pages would loop for ever.
func (p *Pipeline) CatchUp(ctx context.Context, provider string, read HistoryReader, opts CatchUpOptions) (CatchUpSummary, error) {
	if opts.Report == nil {
		opts.Report = func(string, string) {}
	}
	if opts.Progress == nil {
		opts.Progress = func(CatchUpSummary) {}
	}
	var sum CatchUpSummary
	seen := map[string]bool{opts.From: true}
	for page := opts.From; ; {
		h, err := read(ctx, page)
		if err != nil {
			return sum, err
		}
		sum.Pages++
		sum.Refused += len(h.Refused)
		for _, err := range h.Refused {
			p.log.WarnContext(ctx, "a history item refused", "provider", provider, "error", err.Error())
		}
		sum.Read += len(h.Events)
		opts.Progress(sum)
		if err := p.catchUpPage(ctx, provider, h.Events, opts, &sum); err != nil {
			return sum, err
		}
		if h.Next != "" && seen[h.Next] {
			return sum, fmt.Errorf("%w: the page after %q is %q again", billing.ErrHistoryPaging, page, h.Next)
		}
		seen[h.Next] = true
		if opts.PageDone != nil {
			if err := opts.PageDone(h.Next); err != nil {
				return sum, err
			}
		}
		if page = h.Next; page == "" {
			return sum, nil
		}
	}
}

// catchUpPage applies one page's events, in the order the provider signed them.
func (p *Pipeline) catchUpPage(ctx context.Context, provider string, events []billing.HistoryEvent, opts CatchUpOptions, sum *CatchUpSummary) error {
	slices.SortStableFunc(events, func(a, b billing.HistoryEvent) int { return a.At.Compare(b.At) })
	for _, e := range events {
		id, outcome, err := p.recoverOne(ctx, provider, e.Body, opts.DryRun)
		if err != nil {
			return err
		}
		switch outcome {
		case billing.OutcomeDuplicate:
			sum.Stored++
		case answered:
		default:
			sum.Applied++
		}
		opts.Report(id, outcome)
		opts.Progress(*sum)
	}
	return nil
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
