package kube

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImageBuildsAndRuns builds the Dockerfile with podman and runs what
// the pod script and a shell event need in the image, as its user (in a
// chroot of the image's files: podman needs no container runtime). It
// takes minutes and base images, so it runs when asked:
// FIREDRILL_IMAGE_TEST=1, with FIREDRILL_GO_IMAGE and FIREDRILL_BASE_IMAGE
// naming other base images than Docker Hub's, and FIREDRILL_IMAGE_BUILD_ARGS
// more `podman build` arguments (scripts/image-test.sh prepares local ones
// on a machine without Docker Hub).
func TestImageBuildsAndRuns(t *testing.T) {
	if os.Getenv("FIREDRILL_IMAGE_TEST") == "" {
		t.Skip("builds a container image with podman (minutes): set FIREDRILL_IMAGE_TEST=1, or run scripts/image-test.sh")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal("FIREDRILL_IMAGE_TEST is set but podman is not installed (apt-get install podman)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tag := "localhost/firedrill-image-test:" + time.Now().UTC().Format("20060102150405")
	args := []string{"build", "--network", "host", "-t", tag, "--build-arg", "VERSION=image-test"}
	for env, arg := range map[string]string{"FIREDRILL_GO_IMAGE": "GO_IMAGE", "FIREDRILL_BASE_IMAGE": "BASE_IMAGE"} {
		if v := os.Getenv(env); v != "" {
			args = append(args, "--build-arg", arg+"="+v)
		}
	}
	args = append(args, strings.Fields(os.Getenv("FIREDRILL_IMAGE_BUILD_ARGS"))...)
	args = append(args, root)
	build := exec.Command(podman, args...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, lastBytes(string(out), 4000))
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })
	// The image runs as its user, never root.
	user, err := exec.Command(podman, "image", "inspect", "--format", "{{.Config.User}}", tag).Output()
	if err != nil || strings.TrimSpace(string(user)) != "10001:10001" {
		t.Errorf("the image's user %q (%v), want 10001:10001", user, err)
	}
	// What the pod script calls and the clients, run as that user in the
	// image's files (chroot: no container runtime is needed, so this
	// runs where podman can build but not start containers).
	mnt, err := exec.Command(podman, "image", "mount", tag).Output()
	if err != nil {
		t.Fatalf("podman image mount: %v", err)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "image", "unmount", tag).Run() })
	check := `set -e
export HOME=/firedrill PATH=/usr/local/bin:/usr/bin:/bin
id -u; id -g
firedrill version | head -n 1
date -u -d @1795590000 +%Y-%m-%dT%H:%M:%SZ
echo firedrill | base64 | base64 -d
tar --version | head -n 1
psql --version; mariadb --version; redis-cli --version
touch /firedrill/runs/w && rm /firedrill/runs/w`
	out, err := exec.Command("chroot", "--userspec=10001:10001", strings.TrimSpace(string(mnt)), "/bin/sh", "-c", check).CombinedOutput()
	if err != nil {
		t.Fatalf("the image's tools: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, want := range []string{"10001", "10001", "firedrill image-test", "2026-11-25T07:00:00Z", "firedrill", "tar (GNU tar)", "psql (PostgreSQL)", "mariadb", "redis-cli"} {
		if i >= len(lines) || !strings.Contains(lines[i], want) {
			t.Errorf("line %d: want %q in\n%s", i+1, want, out)
		}
	}
	t.Logf("%s", out)
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
