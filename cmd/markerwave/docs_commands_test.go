package main

// TestDocsCommands holds every Markdown file the repository tracks
// (README.md, docs/*.md, traces/README.md, tla/README.md, the examples'
// READMEs, ...) to the commands as they are: every command the
// documentation shows must run as shown.
//
// # What counts as a shown command
//
//   - The lines of fenced blocks tagged sh, bash, shell or console. In an
//     sh, bash or shell block every line that is not blank and not a
//     comment (starting with #) is a command; in a console block only the
//     lines starting with "$ " are, and the other lines are output. A line
//     ending in a backslash continues on the next. A trailing comment is
//     prose, except that "# exit N" (alone or followed by more prose, as
//     in "# exit 1: an orphan message") is the exit status the doc
//     promises; without it the promise is 0. A final "> FILE" sends the
//     command's standard output to FILE, which the block's later
//     commands may read.
//   - Inline code spans in prose that start with "markerwave ", "go run
//     ./cmd/markerwave ", "make " or "go test " (a span may wrap across
//     lines). These are checked at the parse level only (the command or
//     target exists, the flags are the command's, the packages and the
//     tests named exist): inline spans are often synopses ("--dir DIR |
//     --config FILE") rather than runnable lines.
//
// # What is checked
//
// Commands run from the repository's root. For each fenced command:
//
//   - markerwave ..., ./markerwave ... or go run ./cmd/markerwave ...:
//     the subcommand must exist. Cheap commands (check, audit and export
//     of shipped files, serve --export, anything with --help) are run
//     through dispatch, their output files (--diagram, --shiviz, --tlc,
//     --export, --out) redirected into a temporary directory and globs
//     expanded, and must exit as promised. Expensive ones, or ones that
//     need a previous run's output (demo, flow, node, recover,
//     snapshots of a live store, audits of out/...), must be listed in
//     docsSlowCommands, where each flag they use must be one their
//     --help lists and each input file they name must exist; a node
//     command is also run with --check, which parses every flag and
//     checks the config and the id. A command that is neither cheap nor
//     listed fails the test, and so does a listed command no document
//     shows any more.
//   - make X...: every X must be a target of the Makefile.
//   - go test, go build, go run, go install: the packages must exist in
//     this module; go test's -run TestX and -bench X must name tests and
//     benchmarks those packages have.
//   - python3 SCRIPT ...: a program of examples/ the docs run (see
//     docsRunTools): SCRIPT must exist; outside -short it is run, its
//     "> FILE" into a temporary file that the later commands naming FILE
//     read instead. Without python3 installed it and the commands that
//     read its output are not run, saying so (under CI=true that fails,
//     as TestOutsideImplementation does).
//   - rm, kill, mkdir: shell tools of a recipe, not checked.
//   - anything else fails: say in docsShellTools why it is allowed.
//
// Under -short only the parse-level checks run (nothing is dispatched).

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/markerwave/markerwave/internal/testenv"
)

// docsSlowCommands are the documented markerwave commands not run by
// TestDocsCommands, each with why; the key is the command as the docs
// show it, after "markerwave" (the go run and ./ forms are the same key).
var docsSlowCommands = map[string]string{
	"demo --nodes 8 --transfers 20000 --out out/demo-big":                        "the demo: seconds of TCP traffic",
	"audit out/demo-big/trace.jsonl":                                             "needs the demo's output",
	"audit out/demo-*/trace.jsonl":                                               "needs the demo's output",
	"flow --runtime memory":                                                      "the dataflow demo: seconds of runs",
	"check --model tla/MCLarge.cfg --progress":                                   "197,273 states: seconds on 2 cores",
	"check --model tla/MCLarge.cfg --simulate --seed 7 --traces 1000 --depth 40": "1000 random behaviours of MCLarge",
	"node --config impl/runtime/testdata/cluster.json --id P1 --duration 10s":    "a node process for 10 s",
	"node --config impl/runtime/testdata/cluster.json --id P2 --duration 10s":    "a node process for 10 s",
	"node --config impl/runtime/testdata/cluster.json --id P3 --duration 10s":    "a node process for 10 s",
	"snapshots --config impl/runtime/testdata/cluster.json":                      "needs the cluster's store",
	"recover --config impl/runtime/testdata/cluster.json":                        "needs the cluster's store",
	"recover --config impl/runtime/testdata/cluster.json --start":                "restarts the cluster's nodes",
	"supervise --config impl/runtime/testdata/cluster.json --duration 10s":       "the cluster's three node processes for 10 s under a supervisor",
	"audit out/cluster/nodes/":                                                   "needs the cluster's node logs",
	"flow --out out/flow":                                                        "the dataflow demo: seconds of runs",
	"flow --sink-url postgres://postgres@127.0.0.1:5432/flow?sslmode=disable":    "the dataflow demo into a PostgreSQL server the reader runs",
	"audit out/flow/aligned.jsonl":                                               "needs the flow demo's output",
	"audit out/flow/adaptive.jsonl":                                              "needs the flow demo's output",
	"flow --runtime memory --aligned-timeout 0s --force-aligned agg0->sink":      "the dataflow demo: seconds of runs",
	"flow --measure":       "twenty runs of the pipeline: a minute",
	"audit out/dessim":     "needs examples/dessim's output",
	"audit out/dessim-bug": "needs examples/dessim's output",
}

// docsShellTools are the commands of a recipe that are not this
// project's: they are shown, not checked.
var docsShellTools = map[string]string{
	"rm":    "clears an output folder between runs",
	"kill":  "stops the survivors of a crash",
	"mkdir": "creates an output folder",
}

// docsRunTools are the programs other than markerwave that the docs
// show and the test runs (outside -short), each with why.
var docsRunTools = map[string]string{
	"python3": "examples/outside-python's implementation writes the log the next command audits",
}

// docsOutputFlags are the markerwave flags whose value is a file or
// folder the command writes: the test writes them into a temporary
// directory instead.
var docsOutputFlags = map[string]bool{"diagram": true, "shiviz": true, "tlc": true, "export": true, "out": true}

// docCommand is one command a document shows.
type docCommand struct {
	where  string   // file:line
	text   string   // the command as written, without "$ " and the comment
	words  []string // its words, quotes removed
	exit   int      // the exit status the doc promises
	stdout string   // the file a final "> FILE" sends its output to, or ""
	inline bool     // an inline code span: parse-level checks only
}

func TestDocsCommands(t *testing.T) {
	root := filepath.Join("..", "..")
	cmds := readDocCommands(t, root)
	if len(cmds) == 0 {
		t.Fatal("no commands found in the Markdown files")
	}
	c := newDocsChecker(t, root)
	for _, dc := range cmds {
		c.check(dc)
	}
	c.checkSlowListUsed()
	fenced := 0
	for _, dc := range cmds {
		if !dc.inline {
			fenced++
		}
	}
	t.Logf("%d commands shown in blocks and %d in prose; %d of them to run (markerwave and docsRunTools), %d listed as slow", fenced, len(cmds)-fenced, len(c.toRun), len(c.slowUsed))
	if testing.Short() {
		return
	}
	t.Chdir(root)
	for _, dc := range c.toRun {
		c.run(dc)
	}
}

// eachDoc calls fn with the path (under root), the path relative to root
// and the text of every Markdown file the repository tracks (README.md
// first, then the others in path order: docs/*.md, traces/README.md,
// tla/README.md, examples/*/README.md, ...).
func eachDoc(t *testing.T, root string, fn func(path, rel string, b []byte)) {
	t.Helper()
	for _, rel := range markdownFiles(t, root) {
		f := filepath.Join(root, filepath.FromSlash(rel))
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn(f, rel, b)
	}
}

// markdownFiles are the Markdown files git tracks under root, relative to
// it, README.md first. Outside a git checkout (an unpacked archive) they
// are every *.md file of the tree but those under hidden folders and
// out/ (the runs' output), which git ignores.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.md")
	cmd.Dir = root
	if b, err := cmd.Output(); err == nil {
		for _, f := range strings.Split(string(b), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		files = walkMarkdown(t, root)
	}
	i := slices.Index(files, "README.md")
	if i < 0 {
		t.Fatalf("%s has no README.md among its Markdown files %v", root, files)
	}
	files = slices.Delete(files, i, i+1)
	slices.Sort(files)
	return append([]string{"README.md"}, files...)
}

// walkMarkdown are the *.md files under root outside hidden folders and
// out/, relative to root.
func walkMarkdown(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() && rel != "." && (strings.HasPrefix(e.Name(), ".") || rel == "out") {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readDocCommands reads the commands of the Markdown files (eachDoc).
func readDocCommands(t *testing.T, root string) []docCommand {
	var cmds []docCommand
	eachDoc(t, root, func(_, rel string, b []byte) {
		text := string(b)
		cmds = append(cmds, fencedCommands(t, rel, text)...)
		cmds = append(cmds, inlineCommands(t, rel, text)...)
	})
	return cmds
}

// fencedCommands are the command lines of text's shell blocks.
func fencedCommands(t *testing.T, file, text string) []docCommand {
	var cmds []docCommand
	lang, inBlock := "", false
	var pending string
	pendingLine := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inBlock, lang = !inBlock, strings.TrimSpace(strings.TrimPrefix(line, "```"))
			continue
		}
		cmd, ok := commandLine(inBlock, lang, line)
		if !ok {
			continue
		}
		if pending == "" {
			pendingLine = n
		}
		if strings.HasSuffix(cmd, `\`) {
			pending += strings.TrimSuffix(cmd, `\`) + " "
			continue
		}
		cmds = append(cmds, parseDocCommand(t, fmt.Sprintf("%s:%d", file, pendingLine), pending+cmd, false))
		pending = ""
	}
	return cmds
}

// commandLine is the command a line of a block shows, if it shows one:
// see TestDocsCommands for the convention.
func commandLine(inBlock bool, lang, line string) (string, bool) {
	if !inBlock || line == "" {
		return "", false
	}
	switch lang {
	case "sh", "bash", "shell":
		return line, !strings.HasPrefix(line, "#")
	case "console":
		if rest, ok := strings.CutPrefix(line, "$ "); ok {
			return rest, true
		}
	}
	return "", false
}

// inlineSpan is an inline code span of a command (it may wrap).
var inlineSpan = regexp.MustCompile("`((?:markerwave |go run ./cmd/markerwave |make |go test )[^`]*)`")

// inlineCommands are the commands shown in inline code spans of text
// outside its fenced blocks.
func inlineCommands(t *testing.T, file, text string) []docCommand {
	var cmds []docCommand
	prose := blankFences(text)
	for _, m := range inlineSpan.FindAllStringSubmatchIndex(prose, -1) {
		line := 1 + strings.Count(prose[:m[0]], "\n")
		span := strings.Join(strings.Fields(prose[m[2]:m[3]]), " ")
		cmds = append(cmds, parseDocCommand(t, fmt.Sprintf("%s:%d", file, line), span, true))
	}
	return cmds
}

// blankFences is text with the lines of its fenced blocks emptied (the
// line count kept).
func blankFences(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

// exitComment is the promise of an exit status in a trailing comment.
var exitComment = regexp.MustCompile(`^#\s*exit (\d+)\b`)

// parseDocCommand splits a command into words and its comment.
func parseDocCommand(t *testing.T, where, text string, inline bool) docCommand {
	words, comment, err := shellWords(text)
	if err != nil {
		t.Errorf("%s: %q: %v", where, text, err)
	}
	dc := docCommand{where: where, text: strings.TrimSpace(strings.TrimSuffix(text, comment)), words: words, inline: inline}
	if m := exitComment.FindStringSubmatch(comment); m != nil {
		dc.exit, _ = strconv.Atoi(m[1])
	}
	// A trailing & runs the command in the background: the command is
	// the same.
	if n := len(dc.words); n > 0 && dc.words[n-1] == "&" {
		dc.words = dc.words[:n-1]
	}
	if n := len(dc.words); n >= 2 && dc.words[n-2] == ">" {
		dc.words, dc.stdout = dc.words[:n-2], dc.words[n-1]
	}
	return dc
}

// shellWords splits a command line as sh would (single and double
// quotes; no expansion), stopping at a comment, which it returns.
func shellWords(s string) (words []string, comment string, err error) {
	var w wordSplitter
	for i, r := range s {
		if w.quote == 0 && r == '#' && !w.inWord {
			return w.words, s[i:], nil
		}
		w.add(r)
	}
	if w.quote != 0 {
		return w.words, "", fmt.Errorf("unterminated %c quote", w.quote)
	}
	w.endWord()
	return w.words, "", nil
}

// wordSplitter is shellWords' state: the words so far and the one
// being read.
type wordSplitter struct {
	words  []string
	word   strings.Builder
	inWord bool
	quote  rune // the open quote, or 0
}

// add takes the next character of the line.
func (w *wordSplitter) add(r rune) {
	switch {
	case w.quote != 0 && r == w.quote:
		w.quote = 0
	case w.quote != 0:
		w.word.WriteRune(r)
	case r == '\'' || r == '"':
		w.quote, w.inWord = r, true
	case r == ' ' || r == '\t':
		w.endWord()
	default:
		w.word.WriteRune(r)
		w.inWord = true
	}
}

// endWord ends the word being read, if any.
func (w *wordSplitter) endWord() {
	if w.inWord {
		w.words, w.inWord = append(w.words, w.word.String()), false
		w.word.Reset()
	}
}

// docsChecker checks the commands of the docs against the repository.
type docsChecker struct {
	t        *testing.T
	root     string
	targets  map[string]bool            // the Makefile's targets
	module   string                     // the module path
	helps    map[string]map[string]bool // each subcommand's flags: takes a value
	slowUsed map[string]bool            // the docsSlowCommands the docs show
	toRun    []docCommand               // the cheap markerwave commands and docsRunTools', run after the parse-level checks
	written  map[string]string          // a "> FILE" a command ran wrote: FILE to the temporary file
	missing  map[string]string          // a "> FILE" of a command not run: FILE to why
}

func newDocsChecker(t *testing.T, root string) *docsChecker {
	return &docsChecker{t: t, root: root, targets: makeTargets(t, root), module: modulePath(t, root),
		helps: map[string]map[string]bool{}, slowUsed: map[string]bool{},
		written: map[string]string{}, missing: map[string]string{}}
}

// makeTarget is a rule's line in the Makefile.
var makeTarget = regexp.MustCompile(`(?m)^([A-Za-z0-9_.-]+):`)

// makeTargets are the Makefile's targets.
func makeTargets(t *testing.T, root string) map[string]bool {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(b), -1) {
		targets[m[1]] = true
	}
	return targets
}

// modulePath is go.mod's module path.
func modulePath(t *testing.T, root string) string {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod names no module")
	}
	return string(m[1])
}

// check checks one documented command at the parse level, and queues a
// cheap markerwave command to be run.
func (c *docsChecker) check(dc docCommand) {
	words := withoutAssignments(dc.words)
	if len(words) == 0 {
		c.t.Errorf("%s: %q: no command", dc.where, dc.text)
		return
	}
	if args, ok := markerwaveArgs(words); ok {
		c.checkMarkerwave(dc, args)
		return
	}
	switch words[0] {
	case "make":
		c.checkMake(dc, words[1:])
	case "go":
		c.checkGo(dc, words[1:])
	case "python3":
		c.checkScript(dc, words[1:])
	default:
		if _, ok := docsShellTools[words[0]]; !ok {
			c.t.Errorf("%s: %q: %s is not a command the docs may show (markerwave, make, go, or one of docsShellTools)", dc.where, dc.text, words[0])
		}
	}
}

// checkScript: the script a docsRunTools command runs exists; the
// command is queued to run.
func (c *docsChecker) checkScript(dc docCommand, args []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		c.t.Errorf("%s: %q: name the script", dc.where, dc.text)
		return
	}
	if _, err := os.Stat(filepath.Join(c.root, args[0])); err != nil {
		c.t.Errorf("%s: %q: %s does not exist", dc.where, dc.text, args[0])
		return
	}
	c.toRunIfFenced(dc)
}

// assignment is a VAR=value word before a command.
var assignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// withoutAssignments is words without the leading VAR=value words.
func withoutAssignments(words []string) []string {
	for len(words) > 0 && assignment.MatchString(words[0]) {
		words = words[1:]
	}
	return words
}

// markerwaveArgs are the arguments after markerwave of a command that
// runs it, in any of its shown forms.
func markerwaveArgs(words []string) ([]string, bool) {
	switch {
	case words[0] == "markerwave" || words[0] == "./markerwave":
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/markerwave":
		return words[3:], true
	}
	return nil, false
}

// checkMake: every target a make command names is the Makefile's.
func (c *docsChecker) checkMake(dc docCommand, args []string) {
	named := 0
	for _, a := range args {
		if strings.Contains(a, "=") || strings.HasPrefix(a, "-") {
			continue
		}
		named++
		if !c.targets[a] {
			c.t.Errorf("%s: %q: the Makefile has no target %q", dc.where, dc.text, a)
		}
	}
	if named == 0 && !dc.inline {
		c.t.Errorf("%s: %q: name the make target", dc.where, dc.text)
	}
}

// checkGo: the packages a go command names exist, and so do go test's
// tests and benchmarks.
func (c *docsChecker) checkGo(dc docCommand, args []string) {
	if len(args) == 0 {
		c.t.Errorf("%s: %q: a go command without a subcommand", dc.where, dc.text)
		return
	}
	var dirs []string
	for _, a := range args[1:] {
		if dir, ok := c.packageDir(dc, a); ok {
			dirs = append(dirs, dir)
		}
	}
	if args[0] == "test" {
		c.checkTestNames(dc, args[1:], dirs)
	}
}

// packageDir is the directory of a package argument (./x, ./x/...,
// module/x@version); ok is false for an argument that is no package.
func (c *docsChecker) packageDir(dc docCommand, a string) (string, bool) {
	rel, isPkg := "", false
	switch {
	case strings.HasPrefix(a, "./"):
		rel, isPkg = a, true
	case strings.HasPrefix(a, c.module):
		before, _, _ := strings.Cut(a, "@")
		rel, isPkg = "."+strings.TrimPrefix(before, c.module), true
	}
	if !isPkg {
		return "", false
	}
	dir := filepath.Join(c.root, strings.TrimSuffix(strings.TrimSuffix(rel, "..."), "/"))
	if goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(goFiles) == 0 && !strings.HasSuffix(rel, "...") {
		c.t.Errorf("%s: %q: no Go package %s", dc.where, dc.text, a)
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		c.t.Errorf("%s: %q: no directory for %s", dc.where, dc.text, a)
	}
	return dir, true
}

// testName is a -run pattern naming one test.
var testName = regexp.MustCompile(`^\^?(Test\w+)\$?$`)

// checkTestNames: go test's -run TestX names a test, and each
// alternative of -bench a benchmark, of the packages in dirs (all of
// them when none is named: go test runs the current directory's, and
// the docs name packages).
func (c *docsChecker) checkTestNames(dc docCommand, args, dirs []string) {
	funcs := testFuncs(dirs)
	for i := 0; i+1 < len(args); i++ {
		switch strings.TrimLeft(args[i], "-") {
		case "run":
			if m := testName.FindStringSubmatch(args[i+1]); m != nil && !funcs[m[1]] {
				c.t.Errorf("%s: %q: no test %s in %s", dc.where, dc.text, m[1], c.rel(dirs))
			}
		case "bench":
			c.checkBench(dc, args[i+1], funcs, dirs)
		}
	}
}

// checkBench: each alternative of a -bench pattern matches a benchmark.
func (c *docsChecker) checkBench(dc docCommand, pattern string, funcs map[string]bool, dirs []string) {
	for _, alt := range strings.Split(pattern, "|") {
		top, _, _ := strings.Cut(alt, "/")
		if top == "." || top == "" {
			continue
		}
		re, err := regexp.Compile(top)
		if err != nil {
			c.t.Errorf("%s: %q: -bench %q: %v", dc.where, dc.text, pattern, err)
			continue
		}
		found := false
		for f := range funcs {
			found = found || (strings.HasPrefix(f, "Benchmark") && re.MatchString(f))
		}
		if !found {
			c.t.Errorf("%s: %q: no benchmark matches %q in %s", dc.where, dc.text, top, c.rel(dirs))
		}
	}
}

// rel names dirs relative to the repository's root, for a message.
func (c *docsChecker) rel(dirs []string) string {
	var names []string
	for _, d := range dirs {
		r, err := filepath.Rel(c.root, d)
		if err != nil {
			r = d
		}
		names = append(names, "./"+filepath.ToSlash(r))
	}
	return strings.Join(names, " ")
}

// testFunc is a test or benchmark's declaration.
var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)

// testFuncs are the tests, benchmarks and fuzz tests declared in the _test.go files
// of dirs (and of their subdirectories).
func testFuncs(dirs []string) map[string]bool {
	funcs := map[string]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, m := range testFunc.FindAllSubmatch(b, -1) {
				funcs[string(m[1])] = true
			}
			return nil
		})
	}
	return funcs
}

// checkMarkerwave checks a markerwave command: the subcommand exists,
// its flags are the subcommand's; then the command is queued to run if
// it is cheap, or must be in docsSlowCommands.
func (c *docsChecker) checkMarkerwave(dc docCommand, args []string) {
	if len(args) == 0 {
		return // markerwave alone: the command list
	}
	if args[0] == "help" || strings.HasPrefix(args[0], "-") {
		c.toRunIfFenced(dc)
		return
	}
	if _, ok := lookup(args[0]); !ok {
		c.t.Errorf("%s: %q: markerwave has no command %q", dc.where, dc.text, args[0])
		return
	}
	flags := c.flagsOf(args[0])
	for _, f := range usedFlags(args[1:], dc.inline) {
		if _, ok := flags[f]; !ok && f != "help" && f != "h" {
			c.t.Errorf("%s: %q: markerwave %s has no flag --%s (its --help lists %s)", dc.where, dc.text, args[0], f, flagList(flags))
		}
	}
	if dc.inline {
		return
	}
	c.classify(dc, args)
}

// classify queues a cheap command to run, or checks a listed slow one.
func (c *docsChecker) classify(dc docCommand, args []string) {
	key := strings.Join(args, " ")
	if _, ok := docsSlowCommands[key]; ok {
		c.slowUsed[key] = true
		c.checkInputs(dc, args)
		if args[0] == "node" {
			c.toRunIfFenced(dc) // run with --check (see run)
		}
		return
	}
	if !cheapCommand(args) {
		c.t.Errorf("%s: %q: neither run by TestDocsCommands (check, audit or export of shipped files, serve --export, --help) nor listed in docsSlowCommands: list it there, saying why it is not run", dc.where, dc.text)
		return
	}
	c.toRunIfFenced(dc)
}

func (c *docsChecker) toRunIfFenced(dc docCommand) {
	if !dc.inline {
		c.toRun = append(c.toRun, dc)
	}
}

// cheapCommand reports whether a markerwave command is cheap enough to
// run in the test.
func cheapCommand(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	switch args[0] {
	case "check", "audit", "export":
		return true
	case "serve":
		return slices.Contains(args, "--export") || slices.Contains(args, "-export")
	case "node":
		return slices.Contains(args, "--check") || slices.Contains(args, "-check")
	}
	return false
}

// checkSlowListUsed: every listed slow command is one the docs show.
func (c *docsChecker) checkSlowListUsed() {
	var stale []string
	for k := range docsSlowCommands {
		if !c.slowUsed[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		c.t.Errorf("docsSlowCommands lists %q, which no document shows any more: remove it", "markerwave "+k)
	}
}

// helpFlag is a flag's line in a --help listing: its name, and a value
// placeholder if it takes one.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)( \S+)?$`)

// flagsOf are subcommand's flags, from its --help: each flag, and
// whether it takes a value.
func (c *docsChecker) flagsOf(sub string) map[string]bool {
	if f, ok := c.helps[sub]; ok {
		return f
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{sub, "--help"}, &out, &errb); code != exitOK {
		c.t.Errorf("markerwave %s --help exits %d: %s", sub, code, errb.String())
	}
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = m[2] != ""
	}
	c.helps[sub] = flags
	return flags
}

// flagList is the flags, sorted, for a message.
func flagList(flags map[string]bool) string {
	var names []string
	for f := range flags {
		names = append(names, "--"+f)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// flagWord is a flag in a command line; inline spans (synopses) may put
// it in brackets or parentheses.
var flagWord = regexp.MustCompile(`^[\[(]*--?([a-z][a-z0-9-]*)`)

// usedFlags are the flag names args use.
func usedFlags(args []string, inline bool) []string {
	var flags []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !inline && !strings.HasPrefix(a, "-") {
			continue
		}
		if m := flagWord.FindStringSubmatch(a); m != nil {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// checkInputs: the files a listed (not run) command reads exist, unless
// they are a previous run's output (out/...).
func (c *docsChecker) checkInputs(dc docCommand, args []string) {
	flags := c.flagsOf(args[0])
	for i := 1; i < len(args); i++ {
		value, input, next := inputAt(args, i, flags)
		i = next
		if !input || strings.HasPrefix(value, "out/") || !strings.Contains(value, "/") || strings.Contains(value, "://") { // a URL is no file
			continue
		}
		if _, err := os.Stat(filepath.Join(c.root, value)); err != nil {
			c.t.Errorf("%s: %q: %s does not exist", dc.where, dc.text, value)
		}
	}
}

// inputAt reads the argument at args[i]: a positional argument, or the
// value of a flag that is not an output; input is false for anything
// else (a flag without a value, an output). next is the index of the
// argument read last.
func inputAt(args []string, i int, flags map[string]bool) (value string, input bool, next int) {
	name, value, isFlag := splitFlag(args, i, flags)
	switch {
	case !isFlag:
		return args[i], true, i
	case value == "":
		return "", false, i
	case !strings.Contains(args[i], "="):
		next = i + 1
	default:
		next = i
	}
	return value, !docsOutputFlags[name], next
}

// splitFlag reads args[i] as a flag: its name and, for a flag that
// takes one, its value (from --name=value or the next argument).
func splitFlag(args []string, i int, flags map[string]bool) (name, value string, isFlag bool) {
	a := args[i]
	if !strings.HasPrefix(a, "-") || a == "-" {
		return "", "", false
	}
	name = strings.TrimLeft(a, "-")
	if n, v, ok := strings.Cut(name, "="); ok {
		return n, v, true
	}
	if flags[name] && i+1 < len(args) {
		return name, args[i+1], true
	}
	return name, "", true
}

// run runs a cheap documented command through dispatch, from the
// repository's root (the test's working directory by now), and compares
// its exit status with the doc's promise. A node command runs with
// --check. A docsRunTools command runs as a process (runTool).
func (c *docsChecker) run(dc docCommand) {
	words := withoutAssignments(dc.words)
	if _, ok := docsRunTools[words[0]]; ok {
		c.runTool(dc, words)
		return
	}
	args, _ := markerwaveArgs(words)
	if len(args) > 0 && args[0] == "node" && !cheapCommand(args) {
		args = append(append([]string{}, args...), "--check")
		dc.exit = exitOK
	}
	if why, ok := c.readsMissing(args); ok {
		c.t.Logf("%s: %q not run: %s", dc.where, dc.text, why)
		c.noOutput(dc, why)
		return
	}
	args = c.runnable(dc, args)
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	if code != dc.exit {
		c.t.Errorf("%s: %q exits %d, the doc promises %d (mark another status with a trailing # exit N)\nran: markerwave %s\nstderr: %s", dc.where, dc.text, code, dc.exit, strings.Join(args, " "), firstLines(errb.String(), 5))
	}
	c.keepOutput(dc, out.Bytes())
}

// runTool runs a docsRunTools command (python3 SCRIPT ...) as a
// process. Without the tool installed it is not run, saying so, and
// neither are the commands reading its output; under CI=true that fails.
func (c *docsChecker) runTool(dc docCommand, words []string) {
	path, err := exec.LookPath(words[0])
	if err != nil {
		why := fmt.Sprintf("%s is not installed (%v)", words[0], err)
		if testenv.InCI() {
			c.t.Errorf("%s: %q: %s: CI must have it to run the documented command", dc.where, dc.text, why)
		} else {
			c.t.Logf("SKIPPED: %s: %q not run: %s", dc.where, dc.text, why)
		}
		c.noOutput(dc, why)
		return
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(path, words[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	if code != dc.exit {
		c.t.Errorf("%s: %q exits %d, the doc promises %d\nstderr: %s", dc.where, dc.text, code, dc.exit, firstLines(errb.String(), 5))
	}
	c.keepOutput(dc, out.Bytes())
}

// keepOutput writes a command's standard output to a temporary file if
// the doc sends it to a file ("> FILE"), for the later commands that
// name FILE.
func (c *docsChecker) keepOutput(dc docCommand, out []byte) {
	if dc.stdout == "" {
		return
	}
	tmp := filepath.Join(c.t.TempDir(), filepath.Base(dc.stdout))
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.written[dc.stdout] = tmp
}

// noOutput records that the file a command not run would have written
// is missing, and why.
func (c *docsChecker) noOutput(dc docCommand, why string) {
	if dc.stdout != "" {
		c.missing[dc.stdout] = why
	}
}

// readsMissing reports whether args name a file that a command not run
// would have written, and why it was not.
func (c *docsChecker) readsMissing(args []string) (string, bool) {
	for _, a := range args {
		if why, ok := c.missing[a]; ok {
			return why, true
		}
	}
	return "", false
}

// runnable is args with output paths moved into a temporary directory
// and globs expanded.
func (c *docsChecker) runnable(dc docCommand, args []string) []string {
	if len(args) == 0 {
		return args
	}
	flags := c.flagsOf(args[0])
	tmp := c.t.TempDir()
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, value, isFlag := splitFlag(args, i, flags); isFlag && docsOutputFlags[name] && value != "" {
			out = append(out, "--"+name, filepath.Join(tmp, filepath.Base(value)))
			if !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		if tmp, ok := c.written[a]; ok {
			a = tmp // a file a command before wrote ("> FILE")
		}
		out = append(out, c.expand(dc, a)...)
	}
	return out
}

// expand is a glob's matches (a word without one as it is).
func (c *docsChecker) expand(dc docCommand, a string) []string {
	if !strings.ContainsAny(a, "*?[") {
		return []string{a}
	}
	m, _ := filepath.Glob(a)
	if len(m) == 0 {
		c.t.Errorf("%s: %q: %s matches no file", dc.where, dc.text, a)
		return []string{a}
	}
	return m
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// mdLink is a Markdown link or image: its target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link of the Markdown files names a
// file of the repository and, with #anchor, a heading of that file (as
// GitHub makes anchors of headings).
func TestDocsLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	eachDoc(t, root, func(f, _ string, b []byte) {
		for _, m := range mdLink.FindAllStringSubmatch(blankFences(string(b)), -1) {
			checkLink(t, root, f, m[1])
		}
	})
}

// checkLink checks one link target of file.
func checkLink(t *testing.T, root, file, target string) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
	}
	rel, _ := filepath.Rel(root, dest)
	from, _ := filepath.Rel(root, file)
	if _, err := os.Stat(dest); err != nil {
		t.Errorf("%s: the link %s names %s, which does not exist", from, target, rel)
		return
	}
	if anchor != "" && !headingAnchors(t, dest)[anchor] {
		t.Errorf("%s: the link %s names no heading of %s", from, target, rel)
	}
}

// headingAnchors are the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(t *testing.T, file string) map[string]bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(blankFences(string(b)), "\n") {
		h := strings.TrimLeft(line, "#")
		if h == line || !strings.HasPrefix(h, " ") {
			continue
		}
		anchors[slug(strings.TrimSpace(h))] = true
	}
	return anchors
}

// slug is a heading's anchor.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// testMention is a test, benchmark or fuzz test named in prose.
var testMention = regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z]\w*)`)

// TestDocsTestNames: every test, benchmark and fuzz test the Markdown
// files name is declared in a _test.go file of the repository (a
// renamed test leaves no stale name behind).
func TestDocsTestNames(t *testing.T) {
	root := filepath.Join("..", "..")
	funcs := testFuncs([]string{root})
	eachDoc(t, root, func(_, rel string, b []byte) {
		for _, m := range testMention.FindAllStringSubmatchIndex(string(b), -1) {
			if name := string(b[m[2]:m[3]]); !funcs[name] {
				t.Errorf("%s:%d: %s is no test, benchmark or fuzz test of the repository", rel, 1+bytes.Count(b[:m[0]], []byte("\n")), name)
			}
		}
	})
}
