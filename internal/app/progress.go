package app

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing/pipeline"
)

// progressLine shows a backfill's progress. On a terminal it is one line redrawn in place,
// with a bar when --since bounds the run: the provider lists the newest subscriptions
// first and says nothing of the total, so how far back in time the run has reached is the
// only measure of the way left. Elsewhere (a log, CI) it is a plain line at most every
// plainEvery, and one for every wait on the provider.
type progressLine struct {
	w         io.Writer
	label     string
	tty       bool
	since     time.Time
	started   time.Time
	lastPlain time.Time
	drawn     bool
	sum       pipeline.BackfillSummary
}

const plainEvery = 10 * time.Second

func newProgressLine(w io.Writer, label string, since time.Time) *progressLine {
	now := time.Now()
	return &progressLine{w: w, label: label, tty: isTerminal(w), since: since, started: now, lastPlain: now}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// update is called after each page.
func (p *progressLine) update(sum pipeline.BackfillSummary) {
	p.sum = sum
	switch {
	case p.tty:
		p.draw("")
	case time.Since(p.lastPlain) >= plainEvery:
		p.lastPlain = time.Now()
		fmt.Fprintf(p.w, "%s: %s\n", p.label, p.status())
	}
}

// waiting is told of each wait before a retry (a rate limit, a passing failure).
func (p *progressLine) waiting(wait time.Duration, why string) {
	note := fmt.Sprintf("waiting %s: %s", wait.Round(100*time.Millisecond), why)
	if p.tty {
		p.draw(" · " + note)
		return
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.label, note)
}

func (p *progressLine) draw(note string) {
	bar := ""
	if !p.since.IsZero() && !p.sum.Reached.IsZero() {
		bar = progressBar(p.since, p.started, p.sum.Reached, 24) + " "
	}
	fmt.Fprintf(p.w, "\r\033[K%s %s%s%s", p.label, bar, p.status(), note)
	p.drawn = true
}

func (p *progressLine) status() string {
	s := fmt.Sprintf("%d subscription(s), %d page(s)", p.sum.Seen, p.sum.Pages)
	if elapsed := time.Since(p.started).Seconds(); elapsed >= 1 {
		s += fmt.Sprintf(", %.0f/s", float64(p.sum.Seen)/elapsed)
	}
	if !p.sum.Reached.IsZero() {
		s += ", back to " + p.sum.Reached.Format(time.DateOnly)
	}
	return s
}

// done ends the redrawn line, so that what follows starts on a line of its own.
func (p *progressLine) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// progressBar draws how much of the range from newest back to since has been covered
// once the run has reached back to reached.
func progressBar(since, newest, reached time.Time, width int) string {
	fraction := 1.0
	if span := newest.Sub(since); span > 0 {
		fraction = min(max(float64(newest.Sub(reached))/float64(span), 0), 1)
	}
	full := int(fraction * float64(width))
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", full), strings.Repeat("-", width-full), fraction*100)
}

// catchUpLine shows a catch-up's progress as progressLine shows a backfill's: the pages of
// the store's history read, then the notifications applied, with the time left once the
// rate of applying is known.
type catchUpLine struct {
	w                 io.Writer
	label             string
	tty, drawn        bool
	applying, shownAt time.Time
}

func newCatchUpLine(w io.Writer, label string) *catchUpLine {
	return &catchUpLine{w: w, label: label, tty: isTerminal(w), shownAt: time.Now()}
}

// update is called after each page read and each notification applied.
func (p *catchUpLine) update(sum pipeline.CatchUpSummary) {
	status := fmt.Sprintf("%d page(s) read, %d notification(s)", sum.Pages, sum.Read)
	if done := sum.Applied + sum.Stored; done > 0 {
		if p.applying.IsZero() {
			p.applying = time.Now()
		}
		status += fmt.Sprintf(", %d of %d done (%d applied)", done, sum.Read, sum.Applied)
		if elapsed := time.Since(p.applying); elapsed >= time.Second && done < sum.Read {
			left := time.Duration(float64(elapsed) / float64(done) * float64(sum.Read-done))
			status += ", about " + left.Round(time.Second).String() + " left"
		}
	}
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s %s", p.label, status)
		p.drawn = true
	case time.Since(p.shownAt) >= plainEvery:
		p.shownAt = time.Now()
		fmt.Fprintf(p.w, "%s: %s\n", p.label, status)
	}
}

// done ends the redrawn line.
func (p *catchUpLine) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
