package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// verdict of a row against its target.
type verdict string

const (
	none verdict = ""     // informational row, no target
	pass verdict = "PASS" // target met
	miss verdict = "MISS" // target not met
)

func judge(ok bool) verdict {
	if ok {
		return pass
	}
	return miss
}

// row is one line of the results table.
type row struct {
	what    string
	result  string
	target  string
	verdict verdict
}

// table collects the rows in the order the measurements ran.
type table struct {
	rows []row
}

func (t *table) add(what, result, target string, v verdict) {
	t.rows = append(t.rows, row{what, result, target, v})
}

// misses counts the rows that missed their target.
func (t *table) misses() int {
	n := 0
	for _, r := range t.rows {
		if r.verdict == miss {
			n++
		}
	}
	return n
}

// write prints the table as Markdown, so it can be pasted into README.md, with a verdict on
// every row that has a target.
func (t *table) write(w io.Writer) {
	cells := [][]string{{"Measurement", "Result", "Target", ""}}
	for _, r := range t.rows {
		cells = append(cells, []string{r.what, r.result, r.target, string(r.verdict)})
	}
	width := make([]int, len(cells[0]))
	for _, c := range cells {
		for i, s := range c {
			width[i] = max(width[i], len([]rune(s)))
		}
	}
	line := func(c []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, s := range c {
			b.WriteString(" " + s + strings.Repeat(" ", width[i]-len([]rune(s))) + " |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(cells[0])
	sep := make([]string, len(width))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, c := range cells[1:] {
		line(c)
	}
}

// writeChecks prints what a quick run checked, and nothing it did not: each measurement ran
// and every answer it got was right (a wrong one fails the run before this), and no process
// was left behind. Its numbers, a few milliseconds of each, would read as results (a share of
// direct, an RSS growth, a 0 µs launch) and are left out, with the targets they cannot judge.
func (t *table) writeChecks(w io.Writer) {
	fmt.Fprintln(w, "Ran, every answer right (numbers too short to mean anything: `go run ./bench` measures):")
	for _, r := range t.rows {
		// "…: p50" and "… (server CPU per call)" name a statistic, which a quick run does not check.
		what, _, _ := strings.Cut(r.what, ":")
		what, _, _ = strings.Cut(what, " (")
		fmt.Fprintln(w, "  ok  "+what)
	}
	fmt.Fprintln(w, "No process left behind.")
}

// dur formats a duration with 3 significant digits in a fitting unit.
func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// mib formats a byte count in MiB.
func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// count formats n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// throughput formats a load run: calls/s, p50 and p99.
func throughput(s stats) string {
	return fmt.Sprintf("%s calls/s · p50 %s · p99 %s", count(int(s.rate()+0.5)), dur(s.pct(50)), dur(s.pct(99)))
}

// plural formats "1 server", "8 servers".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
