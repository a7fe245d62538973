package app

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// cmdHealthcheck asks a running server's /healthz. It needs no configuration beyond ADDR or
// PORT, so a container can run it with or without the service's secrets.
func cmdHealthcheck(fs *flag.FlagSet) command {
	var target string
	fs.StringVar(&target, "url", "", "the /healthz URL (default: http://127.0.0.1:<port of ADDR or PORT>/healthz)")
	return command{
		help: "Exits 0 when the server answers /healthz with 200 within 3 s, 1 otherwise.",
		bare: true,
		run: func(ctx context.Context, e env) error {
			if target == "" {
				addr := e.getenv("ADDR")
				if addr == "" {
					addr = ":" + cmp.Or(e.getenv("PORT"), "8080")
				}
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					return fmt.Errorf("ADDR: %v", err)
				}
				target = "http://127.0.0.1:" + port + "/healthz"
			}
			reqCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, target, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("unhealthy: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("unhealthy: %s", resp.Status)
			}
			fmt.Fprintln(e.stdout, "healthy")
			return nil
		},
	}
}
