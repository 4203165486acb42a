package cli

import (
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// commandUses lists firedrill's commands with their usage lines, read
// from the help as a user reads it.
func commandUses(t *testing.T) map[string]string {
	t.Helper()
	env, out, _ := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"--help"}); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	_, list, _ := strings.Cut(out.String(), "Available Commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	uses := map[string]string{}
	for _, line := range strings.Split(list, "\n") {
		name := strings.Fields(line)[0]
		if name == "help" || name == "completion" {
			continue
		}
		env, out, _ := clikit.MemoryEnv("")
		Main(env, kinds.Registry(), []string{name, "--help"})
		_, use, _ := strings.Cut(out.String(), "Usage:\n  ")
		use, _, _ = strings.Cut(use, "\n")
		uses[name] = use
	}
	if len(uses) < 8 {
		t.Fatalf("only %d commands in --help: %v", len(uses), uses)
	}
	return uses
}

// Every command whose usage names a required argument, run without it,
// says what it needs, with its usage line, its examples and where to read
// more — not cobra's bare "accepts 1 arg(s), received 0"; run with too
// many, it says how many it takes.
func TestMissingArgumentsTeach(t *testing.T) {
	t.Parallel()
	required := regexp.MustCompile(`^[A-Z][A-Z_.]*[A-Z]$`) // SCENARIO.yaml is not all capitals
	checked := 0
	for name, use := range commandUses(t) {
		var need []string
		words := strings.Fields(use)[2:]
		for i, w := range words {
			if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "-") || i > 0 && strings.HasPrefix(words[i-1], "-") {
				continue // optional, a flag or a flag's value
			}
			if required.MatchString(strings.TrimSuffix(w, "...")) || strings.Contains(w, ".yaml") {
				need = append(need, w)
			}
		}
		if len(need) == 0 {
			continue // nothing required: running it bare would run it
		}
		checked++
		env, out, errb := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), []string{name})
		msg := errb.String()
		if name == "k8s" {
			// k8s splits its arguments at "--" itself and says what it
			// takes, with an example, in its own words.
			if code != clikit.ExitUsage || !strings.Contains(msg, "example: firedrill k8s") {
				t.Errorf("k8s without arguments: exit %d:\n%s", code, msg)
			}
			continue
		}
		if code != clikit.ExitUsage || out.Len() > 0 {
			t.Errorf("%s without arguments: exit %d, stdout %q", name, code, out)
		}
		if strings.Contains(msg, "arg(s)") || !strings.Contains(msg, "firedrill "+name+" needs "+need[0]) ||
			!strings.Contains(msg, "Usage:\n  firedrill "+name) || !strings.Contains(msg, "'firedrill "+name+" --help'") {
			t.Errorf("%s without arguments says:\n%s", name, msg)
		}
		if cmdHasExample(name) && !strings.Contains(msg, "Examples:\n") {
			t.Errorf("%s without arguments shows no example:\n%s", name, msg)
		}
		if strings.HasSuffix(need[len(need)-1], "...") {
			continue
		}
		env, _, errb = clikit.MemoryEnv("")
		args := []string{name}
		for range len(need) + 2 {
			args = append(args, "extra")
		}
		if code := Main(env, kinds.Registry(), args); code != clikit.ExitUsage || !strings.Contains(errb.String(), "arguments: \"extra\"") || !strings.Contains(errb.String(), "Usage:") {
			t.Errorf("%v: exit %d:\n%s", args, code, errb)
		}
	}
	if checked < 5 {
		t.Errorf("only %d commands with required arguments found", checked)
	}
}

// cmdHasExample says whether a command's help has examples.
func cmdHasExample(name string) bool {
	env, out, _ := clikit.MemoryEnv("")
	Main(env, kinds.Registry(), []string{name, "--help"})
	return strings.Contains(out.String(), "Examples:")
}

// Load-shape flags other tools have (--clients, --duration, -c …) are
// unknown to run, and the error says which --set does it, with a
// workload of the scenario named; other unknown flags get no such hint.
func TestLoadShapeFlagHint(t *testing.T) {
	t.Parallel()
	healthy := "../../examples/healthy.yaml"
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--clients", "5", healthy}, []string{"unknown flag: --clients", "--set workloads.<name>.clients=5", "--set workloads.tpcb.clients=5"}},
		{[]string{"run", healthy, "--duration=30s"}, []string{"unknown flag: --duration", "use --set duration=30s"}},
		{[]string{"run", healthy, "-c5"}, []string{"--set workloads.<name>.clients=5"}},
		{[]string{"run", healthy, "--rate", "200"}, []string{"--set workloads.<name>.rate=200"}},
		{[]string{"validate", healthy, "--clients", "5"}, []string{"--set workloads.<name>.clients=5"}},
	}
	for _, tt := range tests {
		env, _, errb := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), tt.args); code != clikit.ExitUsage {
			t.Errorf("%v: exit %d", tt.args, code)
		}
		for _, w := range tt.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tt.args, w, errb)
			}
		}
	}
	env, _, errb := clikit.MemoryEnv("")
	Main(env, kinds.Registry(), []string{"run", healthy, "--bogus"})
	if msg := errb.String(); !strings.Contains(msg, "unknown flag: --bogus") || strings.Contains(msg, "--set") || !strings.Contains(msg, "'firedrill run --help'") {
		t.Errorf("--bogus: %s", msg)
	}
}

// firedrill version and --version print the version, Go's and the
// drivers'; versionText reads the build information.
func TestVersion(t *testing.T) {
	t.Parallel()
	env, out, _ := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"version"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(out.String(), "firedrill "+clikit.Version) || !strings.Contains(out.String(), runtime.Version()+" "+runtime.GOOS) {
		t.Errorf("version:\n%s", out)
	}
	env2, out2, _ := clikit.MemoryEnv("")
	if code := Main(env2, kinds.Registry(), []string{"--version"}); code != 0 || out2.String() != out.String() {
		t.Errorf("--version (exit %d):\n%s\nwant the same as version:\n%s", code, out2, out)
	}

	info := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/firedrill/firedrill", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/jackc/pgx/v5", Version: "v5.12.0"},
			{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}},
	}
	text := versionText(info, false)
	for _, want := range []string{"firedrill v1.2.3 (commit 0123456789ab, modified)", "drivers:\n  github.com/jackc/pgx/v5 v5.12.0\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("versionText lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "cobra") {
		t.Errorf("versionText lists a module that is no driver:\n%s", text)
	}
	info.Main.Version = "v0.0.0-20261125065924-657a73e0bf97+dirty" // a build from a checkout
	if text := versionText(info, false); !strings.HasPrefix(text, "firedrill "+clikit.Version+" (commit 0123456789ab") {
		t.Errorf("a pseudo-version is shown as the version:\n%s", text)
	}
	if all := versionText(info, true); !strings.Contains(all, "modules:") || !strings.Contains(all, "github.com/spf13/cobra v1.10.2") {
		t.Errorf("versionText, all modules:\n%s", all)
	}
}

// --set and ${VAR} on the command line: problems name the --set argument
// or the variable and its file:line:col; validate takes both as run does.
func TestSetAndVariablesOnTheCommandLine(t *testing.T) {
	t.Parallel()
	healthy := "../../examples/healthy.yaml"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"validate", healthy, "--set", "workloads.tpcb.clientz=5"}, `--set workloads.tpcb.clientz=5: unknown key "clientz"; did you mean "clients"?`},
		{[]string{"validate", healthy, "--set", "workloads.oltp.clients=5"}, `--set workloads.oltp.clients=5: workloads has no item named "oltp"`},
		{[]string{"validate", healthy, "--set", "duration=soon"}, `--set duration=soon: duration: bad duration "soon"`},
		{[]string{"run", healthy, "--set", "clients"}, "--set clients: want KEY=VALUE"},
	}
	for _, tt := range tests {
		env, out, errb := clikit.MemoryEnv("")
		if code := Main(env, kinds.Registry(), tt.args); code != clikit.ExitUsage || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: exit %d\nstderr:\n%s\nwant %q", tt.args, code, errb, tt.want)
		}
		if out.Len() > 0 && !strings.Contains(out.String(), "ok") {
			t.Errorf("%v: stdout %q", tt.args, out)
		}
	}
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"validate", healthy, "--set", "workloads.tpcb.clients=64", "--set", "duration=30s"}); code != 0 {
		t.Errorf("good --set: exit %d\n%s", code, errb)
	}
	if !strings.Contains(out.String(), "healthy.yaml: ok") {
		t.Errorf("good --set: %s", out)
	}

	sc := t.TempDir() + "/env.yaml"
	src := "name: env\nduration: 5s\nworkloads:\n  - name: w\n    clients: ${CLIENTS}\n    scripts: [select-only]\n"
	if err := os.WriteFile(sc, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _, errb = clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"validate", sc}); code != clikit.ExitUsage || !strings.Contains(errb.String(), sc+":5:14: environment variable CLIENTS is not set") {
		t.Errorf("unset variable: exit %d\n%s", code, errb)
	}
	env, _, errb = clikit.MemoryEnv("")
	env.LookupEnv = func(name string) (string, bool) { return map[string]string{"CLIENTS": "3"}[name], name == "CLIENTS" }
	if code := Main(env, kinds.Registry(), []string{"validate", sc}); code != 0 {
		t.Errorf("CLIENTS=3: exit %d\n%s", code, errb)
	}
}
