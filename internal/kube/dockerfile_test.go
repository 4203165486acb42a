package kube

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The repository's Dockerfile makes the image the Job runs: built in one
// stage and run from another without the toolchain, as the user the
// Job's securityContext names (never root), with what the pod script
// calls and the database clients a shell event may.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	froms := regexp.MustCompile(`(?m)^FROM `).FindAllStringIndex(text, -1)
	if len(froms) < 2 {
		t.Errorf("%d stages, want a build stage and a runtime stage", len(froms))
	}
	runtime := text[froms[len(froms)-1][0]:]
	if !strings.Contains(runtime, "COPY --from=build /out/firedrill ") {
		t.Error("the runtime stage does not take firedrill from the build stage")
	}
	if strings.Contains(runtime, "golang") {
		t.Error("the runtime stage carries the Go toolchain")
	}
	user := regexp.MustCompile(`(?m)^USER (\d+):(\d+)$`).FindStringSubmatch(runtime)
	if user == nil || user[1] != strconv.Itoa(ImageUser) || user[2] != strconv.Itoa(ImageUser) {
		t.Errorf("USER %v: want the numeric %d:%d the Job's securityContext runs as", user, ImageUser, ImageUser)
	}
	// coreutils: date (GNU: -d @seconds) and base64; tar; the clients.
	for _, pkg := range []string{"coreutils", "tar", "postgresql-client", "mariadb-client", "redis-tools", "ca-certificates"} {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(pkg) + `\b`).MatchString(runtime) {
			t.Errorf("the runtime stage does not install %s", pkg)
		}
	}
	for _, dir := range []string{ScenarioDir, RunsDir} {
		if !strings.Contains(runtime, dir) {
			t.Errorf("the image does not make %s for its user", dir)
		}
	}
}
