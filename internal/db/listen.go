package db

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen passes each notification on a Postgres channel to fn until ctx ends, on a
// connection of its own. Whenever it has (re)connected, fn gets "" first: notifications
// sent while no connection listened are lost, and a cache fed by them must start afresh.
// It returns at once on SQLite, which has no notifications.
func (d *DB) Listen(ctx context.Context, channel string, log *slog.Logger, fn func(payload string)) {
	if d.Engine != Postgres {
		return
	}
	for ctx.Err() == nil {
		err := d.listenOnce(ctx, channel, fn)
		if ctx.Err() != nil {
			return
		}
		log.WarnContext(ctx, "database notifications interrupted; listening again in a second", "channel", channel, "error", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

var errListenEnded = errors.New("the listening connection ended")

func (d *DB) listenOnce(ctx context.Context, channel string, fn func(string)) error {
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
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
