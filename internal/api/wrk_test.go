package api

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// BenchmarkUnderWrk is BenchmarkSideBySide driven from outside: wrk (one thread, 50
// connections, a second a side) sends the load from its own process, on the second CPU
// when taskset is there, while this process serves. Run this process on the first CPU, so
// that server and load never share a core (docs/performance.md):
//
//	taskset -c 0 /tmp/api.test -test.run '^$' -test.bench UnderWrk -test.benchtime 8x
//
// It is skipped where wrk is not installed.
func BenchmarkUnderWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed")
	}
	for _, pair := range sideBySidePairs(b) {
		b.Run(pair.name, func(b *testing.B) {
			var real, basis wrkResult
			alternate(b.N, func() { real.add(wrkFor(b, wrk, pair.real, pair.path, pair.authorization)) },
				func() { basis.add(wrkFor(b, wrk, pair.basis, pair.path, pair.authorization)) })
			b.ReportMetric(real.rate/float64(b.N), "tollgate-req/s")
			b.ReportMetric(basis.rate/float64(b.N), "bare-req/s")
			b.ReportMetric(real.rate/basis.rate, "ratio")
			b.ReportMetric(real.p99, "tollgate-p99-ms") // the worst slice's
			b.ReportMetric(basis.p99, "bare-p99-ms")
		})
	}
}

// wrkResult sums wrk's rates over slices and keeps the highest 99th percentile latency.
type wrkResult struct{ rate, p99 float64 }

func (r *wrkResult) add(slice wrkResult) {
	r.rate += slice.rate
	r.p99 = max(r.p99, slice.p99)
}

// wrkFor serves handler while wrk sends it GETs of path for a second, and gives the rate
// and the 99th percentile latency in ms. Any answer but a 2xx fails the benchmark: a
// refusal would be cheap and flattering.
func wrkFor(b *testing.B, wrk string, handler http.Handler, path, authorization string) wrkResult {
	srv := httptest.NewServer(handler)
	defer srv.Close()
	args := []string{"-t1", "-c50", "-d1s", "--latency", "-H", "Authorization: " + authorization, srv.URL + path}
	cmd := exec.Command(wrk, args...)
	if taskset, err := exec.LookPath("taskset"); err == nil {
		cmd = exec.Command(taskset, append([]string{"-c", "1", wrk}, args...)...)
	}
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	if regexp.MustCompile(`Non-2xx or 3xx responses`).Match(out) {
		b.Fatalf("%s answered other than 2xx:\n%s", path, out)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no rate in wrk's output:\n%s", out)
	}
	rate, _ := strconv.ParseFloat(string(m[1]), 64)
	p := regexp.MustCompile(`\n\s*99%\s+([0-9.]+)(us|ms|s)\b`).FindSubmatch(out)
	if p == nil {
		b.Fatalf("no 99th percentile in wrk's output:\n%s", out)
	}
	p99, _ := strconv.ParseFloat(string(p[1]), 64)
	p99 *= map[string]float64{"us": 0.001, "ms": 1, "s": 1000}[string(p[2])]
	return wrkResult{rate: rate, p99: p99}
}
