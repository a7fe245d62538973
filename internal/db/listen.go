package db

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen passes each notification on a channel to fn until ctx ends. Whenever it has
// (re)started, fn gets "" first: notifications sent while nobody listened are lost, and a
// cache fed by them must start afresh.
//
// On Postgres it listens on a connection of its own (NOTIFY). On SQLite, which has no
// notifications, triggers append them to the notifications table and Listen reads the
// rows past the last it read every PollInterval.
//
// An outage is logged twice, whatever its length: a warning when the listening stops, and
// a line when it is back; the tries in between are debug lines.
func (d *DB) Listen(ctx context.Context, channel string, log *slog.Logger, fn func(payload string)) {
	o := &outage{log: log, channel: channel}
	if d.Engine == SQLite {
		d.poll(ctx, o, fn)
		return
	}
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, channel, o, fn)
		if ctx.Err() != nil {
			return
		}
		o.failed(ctx, err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// outage is one listener's state of its connection, so that an outage is logged once
// when it starts and once when it ends.
type outage struct {
	log     *slog.Logger
	channel string
	since   time.Time // zero: listening
	tries   int
}

func (o *outage) failed(ctx context.Context, err error) {
	o.tries++
	if !o.since.IsZero() {
		o.log.DebugContext(ctx, "database notifications still interrupted", "channel", o.channel, "error", err.Error())
		return
	}
	o.since = time.Now()
	o.log.WarnContext(ctx, "database notifications interrupted; listening again every second", "channel", o.channel, "error", err.Error())
}

func (o *outage) back(ctx context.Context) {
	if o.since.IsZero() {
		return
	}
	o.log.InfoContext(ctx, "database notifications back", "channel", o.channel, "after", time.Since(o.since).Round(time.Millisecond).String(), "tries", o.tries)
	o.since, o.tries = time.Time{}, 0
}

var errListenEnded = errors.New("the listening connection ended")

func (d *DB) listenOnce(ctx context.Context, channel string, o *outage, fn func(string)) error {
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	o.back(ctx)
	fn("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n == nil {
			return errListenEnded
		}
		fn(n.Payload)
	}
}

// PollInterval is how often Listen reads SQLite's notifications: a write by another
// process reaches a running server's kept answers within it.
const PollInterval = 200 * time.Millisecond

// poll is Listen on SQLite. A read is one indexed range scan on one connection of the
// pool, so idle polling costs little.
func (d *DB) poll(ctx context.Context, o *outage, fn func(string)) {
	last, started := int64(0), false
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		if !started {
			var err error
			if last, err = d.lastNotification(ctx); err == nil {
				started = true
				fn("")
			}
		} else if err := d.readNotifications(ctx, o.channel, &last, fn); err != nil {
			if ctx.Err() != nil {
				return
			}
			o.failed(ctx, err)
		} else {
			o.back(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (d *DB) lastNotification(ctx context.Context) (int64, error) {
	var last int64
	err := d.QueryRowContext(ctx, "select coalesce(max(seq), 0) from notifications").Scan(&last)
	return last, err
}

// readNotifications passes the channel's notifications after *last to fn and moves *last
// on. When the log no longer holds the row after *last (pruned before it was read), fn
// gets "" to start afresh.
func (d *DB) readNotifications(ctx context.Context, channel string, last *int64, fn func(string)) error {
	rows, err := d.QueryContext(ctx, `select seq, channel, payload from notifications
		where seq > ? or seq = (select min(seq) from notifications) order by seq limit 1000`, *last)
	if err != nil {
		return err
	}
	defer rows.Close()
	type notification struct {
		seq              int64
		channel, payload string
	}
	var got []notification
	for rows.Next() {
		var n notification
		if err := rows.Scan(&n.seq, &n.channel, &n.payload); err != nil {
			return err
		}
		got = append(got, n)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	if len(got) > 0 && got[0].seq > *last+1 {
		fn("") // rows after *last were pruned unread
	}
	for _, n := range got {
		if n.seq > *last {
			*last = n.seq
			if n.channel == channel {
				fn(n.payload)
			}
		}
	}
	return nil
}
