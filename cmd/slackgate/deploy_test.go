package main

// The shipped deployments (deploy/) keep what the lockdown tests prove
// only if they are set up for it: Claude runs as another user than
// slackgate by default, with the capabilities slackgate needs for that in
// reach, and health endpoints are served off loopback only where a probe
// from outside needs them. No Docker, Kubernetes or systemd runs here, so
// these tests read the files.

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// capableCaps are what a non-root slackgate needs for CLAUDE_USER, as the
// deployments name them.
var capableCaps = []string{"SETUID", "SETGID", "KILL"}

func readDeploy(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDockerfileRunsClaudeAsAnotherUser: two users, the image's default
// CLAUDE_USER, the capabilities as file capabilities on a binary only
// slackgate's group may run, and a build that can clear ambient ones.
func TestDockerfileRunsClaudeAsAnotherUser(t *testing.T) {
	// One instruction a line: continuation lines joined.
	text := strings.ReplaceAll(readDeploy(t, "Dockerfile"), "\\\n", " ")
	final := text[strings.LastIndex(text, "\nFROM "):]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build .*\./cmd/slackgate`),
		regexp.MustCompile(`useradd [^&]*--uid 10001 [^&]*slackgate`),
		regexp.MustCompile(`useradd [^&]*--uid 10002 [^&]*claude`),
		regexp.MustCompile(`chown root:slackgate /usr/local/bin/slackgate && chmod 0750 /usr/local/bin/slackgate`),
		regexp.MustCompile(`setcap cap_setuid,cap_setgid,cap_kill=ep /usr/local/bin/slackgate`),
		regexp.MustCompile(`chmod ug-s`),
		regexp.MustCompile(`(?m)^USER slackgate$`),
		regexp.MustCompile(`(?m)^ENV .*\bCLAUDE_USER=claude\b`),
	} {
		if !want.MatchString(final) && !want.MatchString(text) {
			t.Errorf("deploy/Dockerfile lacks %s", want)
		}
	}
	if regexp.MustCompile(`(?m)^(ENV|ARG) .*HEALTH_ADDR=|^EXPOSE .*9090`).MatchString(final) {
		t.Error("deploy/Dockerfile serves health off loopback by default; only a deployment that probes from outside should")
	}
}

// TestComposeKeepsTheCapabilitiesClaudeUserNeeds: every slackgate
// container drops all capabilities but the three; a worker may use its
// binary's file capabilities (no no-new-privileges), a bot has none.
func TestComposeKeepsTheCapabilitiesClaudeUserNeeds(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			CapDrop     []string          `yaml:"cap_drop"`
			CapAdd      []string          `yaml:"cap_add"`
			SecurityOpt []string          `yaml:"security_opt"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(readDeploy(t, "compose.yaml")), &compose); err != nil {
		t.Fatal(err)
	}
	workers := 0
	for name, s := range compose.Services {
		if s.Build == nil {
			continue // not slackgate's image
		}
		if !slices.Equal(s.CapDrop, []string{"ALL"}) || !containsAll(s.CapAdd, capableCaps) {
			t.Errorf("%s: cap_drop %v, cap_add %v; want ALL dropped and %v added", name, s.CapDrop, s.CapAdd, capableCaps)
		}
		if v, set := s.Environment["CLAUDE_USER"]; set && v == "" {
			t.Errorf("%s empties CLAUDE_USER: Claude would run as slackgate's user", name)
		}
		nnp := slices.ContainsFunc(s.SecurityOpt, func(o string) bool {
			return strings.HasPrefix(o, "no-new-privileges") && !strings.HasSuffix(o, "false")
		})
		switch {
		case slices.Equal(s.Command, []string{"worker"}):
			workers++
			if nnp {
				t.Errorf("%s sets no-new-privileges: the kernel would ignore the binary's file capabilities and CLAUDE_USER would be refused", name)
			}
		case slices.Equal(s.Command, []string{"bot"}) && !nnp:
			t.Errorf("%s, a bot, should set no-new-privileges: it needs no capability", name)
		}
	}
	if workers == 0 {
		t.Error("deploy/compose.yaml has no worker service")
	}
}

// k8sContainer is what TestKubernetesRunsClaudeAsAnotherUser reads of a
// container.
type k8sContainer struct {
	Name            string `yaml:"name"`
	Image           string `yaml:"image"`
	Args            []string
	Env             []struct{ Name, Value string }
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct{ Drop, Add []string }
	} `yaml:"securityContext"`
	LivenessProbe  map[string]any `yaml:"livenessProbe"`
	ReadinessProbe map[string]any `yaml:"readinessProbe"`
}

// TestKubernetesRunsClaudeAsAnotherUser: pods run as non-root, drop all
// capabilities but the three; a worker allows privilege escalation (file
// capabilities), a bot does not; HTTP probes reach HEALTH_ADDR, so it is
// set off loopback.
func TestKubernetesRunsClaudeAsAnotherUser(t *testing.T) {
	dec := yaml.NewDecoder(strings.NewReader(readDeploy(t, "kubernetes/slackgate.yaml")))
	seen := map[string]bool{}
	for {
		var doc struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						SecurityContext struct {
							RunAsNonRoot *bool `yaml:"runAsNonRoot"`
							RunAsUser    *int  `yaml:"runAsUser"`
						} `yaml:"securityContext"`
						Containers []k8sContainer
					}
				}
			}
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pod := doc.Spec.Template.Spec
		for _, c := range pod.Containers {
			if !strings.HasPrefix(c.Image, "slackgate") {
				continue
			}
			seen[c.Args[0]] = true
			if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
				t.Errorf("%s: the pod may run as root; want runAsNonRoot and slackgate's uid", c.Name)
			}
			checkK8sContainer(t, c)
		}
	}
	if !seen["bot"] || !seen["worker"] {
		t.Errorf("found containers %v; want a bot and a worker", seen)
	}
}

func checkK8sContainer(t *testing.T, c k8sContainer) {
	t.Helper()
	sc := c.SecurityContext
	if !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || !containsAll(sc.Capabilities.Add, capableCaps) {
		t.Errorf("%s: capabilities drop %v add %v; want ALL dropped and %v added", c.Name, sc.Capabilities.Drop, sc.Capabilities.Add, capableCaps)
	}
	wantEscalation := c.Args[0] == "worker"
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation != wantEscalation {
		t.Errorf("%s: allowPrivilegeEscalation %v; want %v set", c.Name, sc.AllowPrivilegeEscalation, wantEscalation)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if v, set := env["CLAUDE_USER"]; set && v == "" {
		t.Errorf("%s empties CLAUDE_USER: Claude would run as slackgate's user", c.Name)
	}
	httpProbe := c.LivenessProbe["httpGet"] != nil || c.ReadinessProbe["httpGet"] != nil
	if addr := env["HEALTH_ADDR"]; httpProbe && (addr == "" || strings.HasPrefix(addr, "127.") || strings.HasPrefix(addr, "localhost")) {
		t.Errorf("%s: the kubelet probes the pod's IP, but HEALTH_ADDR is %q (default loopback)", c.Name, addr)
	}
}

// TestSystemdUnitRunsClaudeAsAnotherUser: a plain user with the three
// capabilities as ambient ones (and no more in its bounding set), and
// CLAUDE_USER set.
func TestSystemdUnitRunsClaudeAsAnotherUser(t *testing.T) {
	unit := map[string][]string{}
	for line := range strings.Lines(readDeploy(t, "systemd/slackgate.service")) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			unit[k] = append(unit[k], v)
		}
	}
	if u := unit["User"]; len(u) != 1 || u[0] == "" || u[0] == "root" {
		t.Errorf("User=%v; want slackgate's own user", u)
	}
	want := []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL"}
	for _, k := range []string{"AmbientCapabilities", "CapabilityBoundingSet"} {
		if got := strings.Fields(strings.Join(unit[k], " ")); !containsAll(got, want) || len(got) != len(want) {
			t.Errorf("%s=%v; want exactly %v", k, got, want)
		}
	}
	env := strings.Fields(strings.Join(unit["Environment"], " "))
	if !slices.Contains(env, "CLAUDE_USER=claude") {
		t.Errorf("Environment=%v lacks CLAUDE_USER=claude", env)
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "HEALTH_ADDR=") {
			t.Errorf("the unit sets %s; on one machine the loopback default is what a local probe needs", kv)
		}
	}
	if v := unit["ProtectHome"]; len(v) > 0 && v[0] != "no" {
		t.Errorf("ProtectHome=%v hides CLAUDE_USER's home, where the CLI keeps its state", v)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
