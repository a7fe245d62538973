// Command tollgate serves sign-in forms, a token-guarded API and billing webhooks.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tollgate/tollgate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(tollgate.Main(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
