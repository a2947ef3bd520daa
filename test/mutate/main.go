// Command mutate runs gremlins on one package a file at a time, each file's
// mutants against only the tests that run some of that file's code.
//
// gremlins runs every test of the package for every mutant. In a package
// whose tests start real servers (supervisor: 13 s of CPU per run) that is
// hours on a small machine, though most tests never reach the mutated
// file. A test that runs no statement of a file cannot see a change to it,
// so leaving such tests out changes no mutant's verdict, only its cost.
// This command measures which tests reach which file (one coverage profile
// per test), then runs gremlins once per file with go test's -run (through
// GOFLAGS) naming those tests and -E leaving the package's other files
// unmutated.
//
//	go run ./test/mutate -pkg internal/supervisor -workers 3
//
// Its output is gremlins' own, a header line per file, and a total at the
// end. Coverage is per process: code run only in a child process the test
// starts counts as not run, as it does for gremlins itself.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// gremlins is the pinned mutation tester, fetched by go run through the
// module proxy on first use.
const gremlins = "github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0"

func main() {
	pkg := flag.String("pkg", "", "the package's directory, relative to the module root (e.g. internal/supervisor)")
	workers := flag.Int("workers", 2, "gremlins workers, and tests profiled at once")
	coef := flag.Int("timeout-coefficient", 10, "gremlins' --timeout-coefficient")
	exclude := flag.String("exclude", "", "a regexp of file names (base names) of the package not to mutate")
	only := flag.String("only", "", "a regexp of file names (base names): mutate only these")
	goflags := flag.String("goflags", "", "more GOFLAGS for every build and test run, e.g. -gcflags=-N (an unoptimized build compiles in about half the CPU)")
	flag.Parse()
	if *pkg == "" {
		fmt.Fprintln(os.Stderr, "mutate: -pkg is required")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, *pkg, *workers, *coef, *exclude, *only, *goflags); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, pkg string, workers, coef int, exclude, only, goflags string) error {
	pkg = filepath.Clean(pkg)
	files, err := sourceFiles(pkg, exclude, only)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	reach, err := testsByFile(ctx, pkg, tmp, workers)
	if err != nil {
		return err
	}
	all, err := allSourceFiles(pkg)
	if err != nil {
		return err
	}
	var total tally
	var failed []string
	for _, f := range files {
		tests := reach[f]
		if len(tests) == 0 {
			fmt.Fprintf(out, "== %s: no test runs its code; every mutant is not covered\n", f)
			continue
		}
		fmt.Fprintf(out, "== %s: %d tests run its code: %s\n", f, len(tests), strings.Join(tests, " "))
		t, err := mutateFile(ctx, out, pkg, f, all, tests, workers, coef, goflags)
		if err != nil {
			// gremlins stops when the unmutated tests fail its coverage
			// run (a flaky test under load): the other files still count.
			fmt.Fprintf(out, "== %s: not run: %v\n", f, err)
			failed = append(failed, f)
			continue
		}
		total.add(t)
	}
	fmt.Fprintf(out, "== total: %s\n", total)
	if len(failed) > 0 {
		return fmt.Errorf("gremlins failed on %s; run them again with -only", strings.Join(failed, ", "))
	}
	return nil
}

// sourceFiles are the package's non-test Go files to mutate, by base name.
func sourceFiles(pkg, exclude, only string) ([]string, error) {
	all, err := allSourceFiles(pkg)
	if err != nil {
		return nil, err
	}
	var ex, on *regexp.Regexp
	if exclude != "" {
		if ex, err = regexp.Compile(exclude); err != nil {
			return nil, fmt.Errorf("-exclude: %w", err)
		}
	}
	if only != "" {
		if on, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("-only: %w", err)
		}
	}
	var files []string
	for _, f := range all {
		if (ex != nil && ex.MatchString(f)) || (on != nil && !on.MatchString(f)) {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

func allSourceFiles(pkg string) ([]string, error) {
	ents, err := os.ReadDir(pkg)
	if err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			files = append(files, n)
		}
	}
	return files, nil
}

// testsByFile runs each top-level test of pkg alone with a coverage
// profile and returns, for each source file, the tests that ran at least
// one of its statements.
func testsByFile(ctx context.Context, pkg, tmp string, workers int) (map[string][]string, error) {
	bin := filepath.Join(tmp, "pkg.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-cover", "-covermode=set", "-vet=off", "-o", bin, "./"+pkg)
	build.Env = append(os.Environ(), "GOFLAGS=")
	if b, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the package's test binary: %w\n%s", err, b)
	}
	list, err := exec.CommandContext(ctx, bin, "-test.list", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("list tests: %w", err)
	}
	var tests []string
	for _, l := range strings.Fields(string(list)) {
		if strings.HasPrefix(l, "Test") || strings.HasPrefix(l, "Fuzz") || strings.HasPrefix(l, "Example") {
			tests = append(tests, l)
		}
	}
	var (
		mu    sync.Mutex
		reach = map[string][]string{}
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, max(workers, 1))
	)
	for i, name := range tests {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			prof := filepath.Join(tmp, fmt.Sprintf("cover-%d.out", i))
			cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+name+"$", "-test.count=1", "-test.timeout=10m", "-test.coverprofile", prof)
			cmd.Dir = pkg
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s fails unmutated: %w\n%s", name, err, tail(b)))
				mu.Unlock()
				return
			}
			files, err := coveredFiles(prof)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			for _, f := range files {
				reach[f] = append(reach[f], name)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, ts := range reach {
		slices.Sort(ts)
	}
	return reach, nil
}

// coveredFiles are the base names of the files a coverage profile shows
// some statement of as run. A line reads "path/file.go:l.c,l.c stmts count".
func coveredFiles(prof string) ([]string, error) {
	f, err := os.Open(prof)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		path, _, ok := strings.Cut(line, ":")
		fields := strings.Fields(line)
		if !ok || len(fields) != 3 || fields[2] == "0" {
			continue
		}
		seen[filepath.Base(path)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read coverage profile: %w", err)
	}
	files := make([]string, 0, len(seen))
	for f := range seen {
		files = append(files, f)
	}
	return files, nil
}

// mutateFile runs gremlins on file alone, with only tests run per mutant.
func mutateFile(ctx context.Context, out io.Writer, pkg, file string, all, tests []string, workers, coef int, goflags string) (tally, error) {
	var others []string
	for _, f := range all {
		if f != file {
			others = append(others, regexp.QuoteMeta(strings.TrimSuffix(f, ".go")))
		}
	}
	args := []string{"run", gremlins, "unleash", "--workers", fmt.Sprint(workers),
		"--timeout-coefficient", fmt.Sprint(coef), "--output-statuses", "kltcv",
		// gremlins names files relative to the package's directory. A
		// file in a subdirectory is another package's, whose tests these
		// are not (and gremlins would run a package main's mutants against
		// the module root's tests: it finds a package by its name).
		"-E", "/"}
	if len(others) > 0 {
		args = append(args, "-E", "^("+strings.Join(others, "|")+`)\.go$`)
	}
	args = append(args, "./"+pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), strings.TrimSpace("GOFLAGS=-count=1 -vet=off -ldflags=-w -run=^("+strings.Join(tests, "|")+")$ "+goflags))
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(out, &buf)
	cmd.Stderr = out
	if err := cmd.Run(); err != nil {
		return tally{}, fmt.Errorf("gremlins: %w", err)
	}
	return count(buf.String()), nil
}

// tally counts mutants by gremlins' status.
type tally struct{ killed, lived, timedOut, notCovered, notViable int }

var statusLine = regexp.MustCompile(`^\s*(KILLED|LIVED|TIMED OUT|NOT COVERED|NOT VIABLE) `)

func count(log string) tally {
	var t tally
	for _, l := range strings.Split(log, "\n") {
		switch m := statusLine.FindStringSubmatch(l); {
		case m == nil:
		case m[1] == "KILLED":
			t.killed++
		case m[1] == "LIVED":
			t.lived++
		case m[1] == "TIMED OUT":
			t.timedOut++
		case m[1] == "NOT COVERED":
			t.notCovered++
		case m[1] == "NOT VIABLE":
			t.notViable++
		}
	}
	return t
}

func (t *tally) add(u tally) {
	t.killed += u.killed
	t.lived += u.lived
	t.timedOut += u.timedOut
	t.notCovered += u.notCovered
	t.notViable += u.notViable
}

func (t tally) String() string {
	eff := 0.0
	if n := t.killed + t.lived; n > 0 {
		eff = 100 * float64(t.killed) / float64(n)
	}
	return fmt.Sprintf("killed %d, lived %d, timed out %d, not covered %d, not viable %d; efficacy (gremlins': killed over killed and lived) %.1f%%",
		t.killed, t.lived, t.timedOut, t.notCovered, t.notViable, eff)
}

// tail is the end of a failing test's output, enough to see why.
func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
