package app

import (
	"context"
	"flag"
)

func cmdMigrate(*flag.FlagSet) command {
	return command{
		help: "Applies pending database migrations (DATABASE_URL) and exits.",
		run: func(ctx context.Context, e env) error {
			d, err := openMigrating(ctx, e, true)
			if err != nil {
				return err
			}
			defer d.Close()
			return nil
		},
	}
}
