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
	pairs, token := sideBySidePairs(b)
	for _, pair := range pairs {
		b.Run(pair.name, func(b *testing.B) {
			var real, basis float64
			alternate(b.N, func() { real += wrkFor(b, wrk, pair.real, pair.path, token) }, func() { basis += wrkFor(b, wrk, pair.basis, pair.path, token) })
			b.ReportMetric(real/float64(b.N), "tollgate-req/s")
			b.ReportMetric(basis/float64(b.N), "bare-req/s")
			b.ReportMetric(real/basis, "ratio")
		})
	}
}

// wrkFor serves handler while wrk sends it GETs of path for a second, and gives the
// rate. Any answer but a 2xx fails the benchmark: a refusal would be cheap and flattering.
func wrkFor(b *testing.B, wrk string, handler http.Handler, path, authorization string) float64 {
	srv := httptest.NewServer(handler)
	defer srv.Close()
	args := []string{"-t1", "-c50", "-d1s", "-H", "Authorization: " + authorization, srv.URL + path}
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
	return rate
}
