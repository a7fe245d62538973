package app

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/retention"
)

func cmdEventsPrune(fs *flag.FlagSet) command {
	dryRun := fs.Bool("dry-run", false, "count what would be removed; remove nothing")
	return command{
		help: "Removes stored events received longer ago than EVENT_RETENTION, as serve does every hour:\n" +
			"never a subscription's newest event, nor an unresolved or unprocessed one younger than\n" +
			"EVENT_RETENTION_UNRESOLVED (twice the window unless set). Each leaves its key, so that a\n" +
			"redelivery is still recognised. With ARCHIVE_DIR set, each day's events are written there\n" +
			"first. Prints how many it removed, and how many of them were unresolved.",
		run: func(ctx context.Context, e env) error {
			r := e.cfg.Retention
			if r.Window == 0 {
				return errors.New("EVENT_RETENTION: is not set, so every event is kept; set it (180d or more, such as 400d) to remove older ones")
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			res, err := retention.New(d, retention.Options{Window: r.Window, Unresolved: r.Unresolved, ArchiveDir: r.ArchiveDir, Log: e.log}).Pass(ctx, *dryRun)
			verb := "removed"
			if *dryRun {
				verb = "would remove"
			}
			fmt.Fprintf(e.stdout, "%s %d event(s) received before %s, %d of them unresolved (those are kept %s)\n", verb, res.Removed,
				time.Now().UTC().Add(-r.Window).Format(time.RFC3339), res.Unresolved, billing.FormatDuration(r.Unresolved))
			for _, f := range res.Archived {
				fmt.Fprintf(e.stdout, "archived to %s\n", f)
			}
			if !*dryRun {
				recordByHand(ctx, e, d, "events prune", "older than "+billing.FormatDuration(r.Window), "", outcome(err, fmt.Sprintf("%d removed", res.Removed)))
			}
			return err
		},
	}
}

func cmdEventsExport(fs *flag.FlagSet) command {
	before := fs.String("before", "", "export the events received before this date or RFC 3339 time (required)")
	zipped := fs.Bool("gzip", false, "write gzip")
	out := fs.String("out", "", "write to this file instead of stdout")
	return command{
		required: []string{"before"},
		help: "Writes every stored event received before --before as NDJSON: one JSON object per line with\n" +
			"everything its record holds (ids, type, payload, times, outcome and the change it made).\n" +
			"For an archive before EVENT_RETENTION removes them.",
		run: func(ctx context.Context, e env) error {
			until, err := parseSince(*before)
			if err != nil {
				return fmt.Errorf("--before: want a date (2026-01-31) or an RFC 3339 time, got %q", *before)
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			w := e.stdout
			if *out != "" {
				f, err := os.Create(*out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			n, err := export(w, *zipped, func(w io.Writer) (int, error) { return retention.Export(ctx, d, w, until) })
			fmt.Fprintf(e.stderr, "exported %d event(s) received before %s\n", n, until.Format(time.RFC3339))
			return err
		},
	}
}

// export runs write over w, through gzip when zipped.
func export(w io.Writer, zipped bool, write func(io.Writer) (int, error)) (int, error) {
	if !zipped {
		return write(w)
	}
	zw := gzip.NewWriter(w)
	n, err := write(zw)
	if closeErr := zw.Close(); err == nil {
		err = closeErr
	}
	return n, err
}
