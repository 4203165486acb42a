package cli

import (
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/internal/clikit"
)

// driverModules are the modules that speak to databases: their versions
// matter when a run behaves differently on two machines.
var driverModules = []string{
	"github.com/jackc/pgx/v5",
	"github.com/go-sql-driver/mysql",
	"github.com/redis/go-redis/v9",
	"github.com/prometheus/client_golang",
}

// pseudoVersion matches the module version Go makes up from a commit
// (v0.0.0-20261125065924-657a73e0bf97, +dirty): the commit says it better.
var pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// versionText is what 'firedrill version' and --version print: the
// version (-ldflags, else the module's from the build information), the
// commit it was built from, Go's version and the drivers' versions.
func versionText(info *debug.BuildInfo, all bool) string {
	var b strings.Builder
	version := clikit.Version
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" && !pseudoVersion.MatchString(info.Main.Version) && version == "0.1.0-dev" {
		version = info.Main.Version // go install …@v1.2.3
	}
	fmt.Fprintf(&b, "firedrill %s", version)
	if info != nil {
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		var build []string
		if rev := settings["vcs.revision"]; rev != "" {
			build = append(build, "commit "+rev[:min(12, len(rev))])
		}
		if t := settings["vcs.time"]; t != "" {
			build = append(build, t)
		}
		if settings["vcs.modified"] == "true" {
			build = append(build, "modified")
		}
		if len(build) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(build, ", "))
		}
	}
	fmt.Fprintf(&b, "\n%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if info == nil {
		b.WriteString("modules: unknown (built without module information)\n")
		return b.String()
	}
	var lines []string
	for _, d := range info.Deps {
		if all || slices.Contains(driverModules, d.Path) {
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path + " " + d.Replace.Version
			}
			lines = append(lines, fmt.Sprintf("  %s %s", d.Path, v))
		}
	}
	what := "drivers"
	if all {
		what = "modules"
	}
	if len(lines) == 0 {
		fmt.Fprintf(&b, "%s: none in the build information\n", what)
		return b.String()
	}
	fmt.Fprintf(&b, "%s:\n%s\n", what, strings.Join(lines, "\n"))
	return b.String()
}

func newVersionCmd(env *clikit.Env) *cobra.Command {
	all := false
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print firedrill's version, the Go it was built with and its database drivers' versions",
		Long: `Print firedrill's version (set at build time with -ldflags, or the module
version of 'go install …@version'), the commit it was built from, the Go
version and platform, and the versions of the database driver modules
compiled in (--modules: every module). Paste it into bug reports.
'firedrill --version' prints the same.`,
		Example: `  firedrill version
  firedrill version --modules`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info, _ := debug.ReadBuildInfo()
			fmt.Fprint(env.Stdout, versionText(info, all))
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "modules", false, "list every module compiled in, not only the database drivers")
	return cmd
}

// versionTemplate is --version's output as a cobra template: the same
// text as 'firedrill version', braces escaped.
func versionTemplate() string {
	info, _ := debug.ReadBuildInfo()
	text := versionText(info, false)
	return strings.NewReplacer("{{", `{{"{{"}}`).Replace(text)
}
