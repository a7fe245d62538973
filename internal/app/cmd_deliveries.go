package app

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tollgate/tollgate/internal/outbound"
	"github.com/tollgate/tollgate/internal/stores"
)

func cmdDeliveriesList(fs *flag.FlagSet) command {
	var filter outbound.Filter
	var failed, asJSON bool
	fs.BoolVar(&failed, "failed", false, "only deliveries given up on (retried for 3 days without a 2xx)")
	fs.StringVar(&filter.UserID, "user", "", "only deliveries about this user (USER_ID)")
	fs.IntVar(&filter.Limit, "limit", 100, "at most this many")
	fs.BoolVar(&asJSON, "json", false, "print JSON, one object per line")
	return command{
		help: "Lists outbound webhooks (OUTBOUND_WEBHOOK_URL), newest first: id, webhook-id, user, status\n(pending, delivered, failed), attempts, and the last attempt's error or the next attempt's time.",
		run: func(ctx context.Context, e env) error {
			if filter.UserID != "" {
				if _, err := uuid.Parse(filter.UserID); err != nil {
					return fmt.Errorf("--user: want the identity user's UUID, got %q", filter.UserID)
				}
			}
			if failed {
				filter.Status = outbound.Failed
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			list, err := outbound.List(ctx, d, filter)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, delivery := range list {
					if err := enc.Encode(delivery); err != nil {
						return err
					}
				}
				return nil
			}
			printDeliveries(e.stdout, list)
			return nil
		},
	}
}

func printDeliveries(w io.Writer, list []outbound.Delivery) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no deliveries")
		return
	}
	for _, d := range list {
		fmt.Fprintf(w, "%d  %s  user %s  %s  %s  attempts %d", d.ID, d.MessageID, d.UserID, d.CreatedAt.Format(time.RFC3339), d.Status, d.Attempts)
		switch {
		case d.DeliveredAt != nil:
			fmt.Fprintf(w, "  delivered %s", d.DeliveredAt.Format(time.RFC3339))
		case d.NextAttemptAt != nil:
			fmt.Fprintf(w, "  next %s", d.NextAttemptAt.Format(time.RFC3339))
		}
		if d.LastError != "" && d.DeliveredAt == nil {
			fmt.Fprintf(w, "  last error: %s", d.LastError)
		}
		fmt.Fprintln(w)
	}
}

func cmdDeliveriesRetry(fs *flag.FlagSet) command {
	var failed bool
	fs.BoolVar(&failed, "failed", false, "every failed delivery")
	return command{
		args: "[ID]",
		help: "Makes one pending or failed outbound webhook (ID from \"deliveries list\"), or with --failed\nevery failed one, due now and retried for another 3 days. A running server sends it within\na second. Delivered ones are not sent again.",
		check: func(args []string, _ stores.List) error {
			if failed == (len(args) == 1) {
				return fmt.Errorf("give either an ID or --failed")
			}
			if !failed {
				if n, err := strconv.ParseInt(args[0], 10, 64); err != nil || n <= 0 {
					return fmt.Errorf("ID: want a delivery id from \"deliveries list\", got %q", args[0])
				}
			}
			return nil
		},
		run: func(ctx context.Context, e env) error {
			var id int64
			if !failed {
				id, _ = strconv.ParseInt(e.args[0], 10, 64) // checked
			}
			d, err := openDB(ctx, e)
			if err != nil {
				return err
			}
			defer d.Close()
			if failed {
				n, err := outbound.RetryFailed(ctx, d, time.Now())
				recordByHand(ctx, e, d, "retry delivery", "every failed delivery", "", outcome(err, fmt.Sprintf("%d queued", n)))
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%d failed deliveries are due again\n", n)
				return nil
			}
			ok, err := outbound.Retry(ctx, d, id, time.Now())
			user, _ := outbound.UserOf(ctx, d, id) // unknown: recorded without one
			result := outcome(err, "queued")
			if err == nil && !ok {
				result = "not retryable"
			}
			recordByHand(ctx, e, d, "retry delivery", e.args[0], user, result)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("delivery %d: no pending or failed delivery has this id (delivered ones are not sent again)", id)
			}
			fmt.Fprintf(e.stdout, "delivery %d is due again\n", id)
			return nil
		},
	}
}
