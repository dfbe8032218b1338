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
	"os/exec"
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

// TestIgnoreFilesKeepSecretsAndBuildsOut: git never offers to commit, and
// a docker build of deploy/Dockerfile never sends, the tokens (.env,
// deploy/*.env), keys, the embedded store, the tool cache or a built
// binary, wherever go build left it; the examples and the sources stay in.
func TestIgnoreFilesKeepSecretsAndBuildsOut(t *testing.T) {
	root := docsRoot(t)
	out := []string{".env", ".env.local", "deploy/bot.env", "deploy/worker.env", "deploy/slackgate.env", "deploy/redis.env",
		"data/slackgate.db", "data/decision-signing-key", "signing.key", "bin/slackgate", "slackgate",
		"cmd/slackgate/slackgate", "relay/relay.test", "cpu.prof", ".cache"}
	in := []string{"deploy/bot.env.example", "deploy/slackgate.env.example", "cmd/slackgate/main.go", "cmd/slackgate/new.go",
		"deploy/Dockerfile", "go.mod", "Makefile"}
	for _, p := range out {
		if !gitIgnores(t, root, p) {
			t.Errorf(".gitignore lets %s be committed", p)
		}
	}
	for _, p := range in {
		if gitIgnores(t, root, p) {
			t.Errorf(".gitignore ignores %s, which belongs in the repository", p)
		}
	}
	// Docker's own matcher is not ours to import: the lines that keep each
	// of those out must be there as Docker reads them (relative to the
	// context, ** for any depth).
	lines := strings.Fields(docText(t, filepath.Join(root, ".dockerignore")))
	for _, want := range []string{".git", ".cache", "data", "bin", ".env", "**/*.env", "**/*.key", "**/decision-signing-key",
		"cmd/slackgate/slackgate", "**/*.test"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %q: a docker build would send it to the daemon", want)
		}
	}
	if tracked, err := exec.Command("git", "-C", root, "ls-files", "cmd/slackgate/slackgate", "bin", "data").Output(); err != nil || len(tracked) > 0 {
		t.Errorf("git ls-files of build outputs = %q, %v; want none committed", tracked, err)
	}
}

// gitIgnores reports whether git would ignore path (relative to root),
// whether or not it exists.
func gitIgnores(t *testing.T, root, path string) bool {
	t.Helper()
	cmd := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", path)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false
	}
	t.Fatalf("git check-ignore %s: %v (the test reads the repository's .gitignore through git)", path, err)
	return false
}

// TestMakeDoctorStartsAsMakeRun: make doctor reads .env and finds the CLI
// where make run installs it, so it checks what make run will start; make
// run checks the settings offline before it spends minutes installing the
// CLI.
func TestMakeDoctorStartsAsMakeRun(t *testing.T) {
	recipes := map[string]string{}
	var target string
	for line := range strings.Lines(docText(t, filepath.Join(docsRoot(t), "Makefile"))) {
		switch {
		case strings.HasPrefix(line, "\t") && target != "":
			recipes[target] += line
		case regexp.MustCompile(`^[a-z0-9-]+:`).MatchString(line):
			target, _, _ = strings.Cut(line, ":")
		default:
			target = ""
		}
	}
	run, doctor := recipes["run"], recipes["doctor"]
	for name, r := range map[string]string{"run": run, "doctor": doctor} {
		if !strings.HasPrefix(r, "\t$(DOTENV);") {
			t.Errorf("make %s does not start by reading .env as the other does:\n%s", name, r)
		}
	}
	if !strings.Contains(doctor, "$(PINNED_CLI)") || !strings.Contains(doctor, "./bin/slackgate doctor") {
		t.Errorf("make doctor does not run slackgate doctor with the CLI make run installs:\n%s", doctor)
	}
	offline, install := strings.Index(run, "doctor -offline run"), strings.Index(run, ".ci/claude-code.sh")
	if offline < 0 || install < 0 || offline > install {
		t.Errorf("make run does not check the settings offline before it installs the CLI:\n%s", run)
	}
}

// envExample is the value a deploy/*.env.example file gives name.
func envExample(t *testing.T, file, name string) string {
	t.Helper()
	for line := range strings.Lines(readDeploy(t, file)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+"="); ok {
			return v
		}
	}
	t.Fatalf("deploy/%s does not set %s", file, name)
	return ""
}

// pinnedCLI is the Claude Code version the Makefile pins.
func pinnedCLI(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^CLAUDE_CODE_VERSION \?= (\S+)$`).FindStringSubmatch(docText(t, filepath.Join(docsRoot(t), "Makefile")))
	if m == nil {
		t.Fatal("the Makefile pins no CLAUDE_CODE_VERSION")
	}
	return m[1]
}

// TestDockerfileSaysWhereTheRepositoryGoes: the example run mounts the
// repository where the example settings say Claude works, and the store
// in a volume; the image installs the CLI the Makefile pins.
func TestDockerfileSaysWhereTheRepositoryGoes(t *testing.T) {
	text := readDeploy(t, "Dockerfile")
	workdir := envExample(t, "slackgate.env.example", "CLAUDE_WORKDIR")
	run := regexp.MustCompile(`(?m)^#\s+docker run .*$`).FindString(text)
	if !regexp.MustCompile(`-v \S+:`+regexp.QuoteMeta(workdir)+`\s`).MatchString(run) || !strings.Contains(run, ":/data ") {
		t.Errorf("the Dockerfile's example run %q mounts no repository at CLAUDE_WORKDIR=%s, or no /data", run, workdir)
	}
	if !strings.Contains(text, "ARG CLAUDE_CODE_VERSION="+pinnedCLI(t)+"\n") {
		t.Errorf("the image does not install the CLI the Makefile pins (%s)", pinnedCLI(t))
	}
}

// TestComposeWorkersShareTheRepository: every worker bind-mounts the same
// host directory at the same path, the one the bots hand out; none gets
// a volume of its own.
func TestComposeWorkersShareTheRepository(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal([]byte(readDeploy(t, "compose.yaml")), &compose); err != nil {
		t.Fatal(err)
	}
	workdir := envExample(t, "bot.env.example", "CLAUDE_WORKDIR")
	mounts := map[string]bool{}
	for name, s := range compose.Services {
		if !slices.Equal(s.Command, []string{"worker"}) {
			continue
		}
		var found string
		for _, v := range s.Volumes {
			// SOURCE:TARGET[:MODE], where SOURCE may be ${VAR:?message}.
			end := strings.Index(v, ":")
			if strings.HasPrefix(v, "${") {
				end = strings.Index(v, "}") + 1
			}
			if dst, _, _ := strings.Cut(v[end+1:], ":"); dst == workdir {
				found = v[:end]
			}
		}
		switch {
		case found == "":
			t.Errorf("%s mounts nothing at %s, where the bots' sessions run", name, workdir)
		case !strings.HasPrefix(found, "/") && !strings.HasPrefix(found, "${") && !strings.HasPrefix(found, "."):
			t.Errorf("%s mounts the named volume %q at %s: an empty directory, not the repository", name, found, workdir)
		}
		mounts[found] = true
	}
	if len(mounts) != 1 {
		t.Errorf("the workers mount %v at %s; want one and the same repository", mounts, workdir)
	}
}

// TestKubernetesWorkersShareTheRepository: every worker mounts one
// ReadWriteMany claim at the bots' CLAUDE_WORKDIR (never an emptyDir of
// its own); a local image is not pulled; the header says what Pod
// Security level the pods need.
func TestKubernetesWorkersShareTheRepository(t *testing.T) {
	text := readDeploy(t, "kubernetes/slackgate.yaml")
	if !strings.Contains(text, "pod-security.kubernetes.io/enforce=baseline") {
		t.Error("the Kubernetes manifest does not say its pods need Pod Security baseline")
	}
	type volume struct {
		Name string
		PVC  *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		EmptyDir any `yaml:"emptyDir"`
	}
	var workers []volume
	claims := map[string][]string{}
	dec := yaml.NewDecoder(strings.NewReader(text))
	for {
		var doc struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				AccessModes []string `yaml:"accessModes"`
				Template    struct {
					Spec struct {
						Containers []struct {
							Image           string
							ImagePullPolicy string `yaml:"imagePullPolicy"`
							Args            []string
							VolumeMounts    []struct {
								Name      string
								MountPath string `yaml:"mountPath"`
							} `yaml:"volumeMounts"`
						}
						Volumes []volume
					}
				}
			}
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if doc.Kind == "PersistentVolumeClaim" {
			claims[doc.Metadata.Name] = doc.Spec.AccessModes
		}
		for _, c := range doc.Spec.Template.Spec.Containers {
			if strings.HasSuffix(c.Image, ":latest") || (c.ImagePullPolicy != "IfNotPresent" && c.ImagePullPolicy != "Never") {
				t.Errorf("%s: image %s with pull policy %q: a locally built image would be pulled, and fail", c.Args, c.Image, c.ImagePullPolicy)
			}
			if c.Args[0] != "worker" {
				continue
			}
			for _, m := range c.VolumeMounts {
				if m.MountPath != "/work" {
					continue
				}
				for _, v := range doc.Spec.Template.Spec.Volumes {
					if v.Name == m.Name {
						workers = append(workers, v)
					}
				}
			}
		}
	}
	if len(workers) == 0 {
		t.Fatal("no worker mounts anything at /work, the image's CLAUDE_WORKDIR")
	}
	for _, v := range workers {
		if v.EmptyDir != nil || v.PVC == nil || !slices.Contains(claims[v.PVC.ClaimName], "ReadWriteMany") {
			t.Errorf("the workers' /work is %+v; want a ReadWriteMany claim the manifest declares (claims: %v)", v, claims)
		}
	}
}

// TestSystemdStepsRunAsWritten: the unit's setup steps are shell that
// parses, create /etc/slackgate before writing into it, clone the
// repository where the example settings say Claude works before giving
// it to claude, install the CLI the Makefile pins, and reload systemd
// before enabling the unit.
func TestSystemdStepsRunAsWritten(t *testing.T) {
	var steps []string
	for line := range strings.Lines(readDeploy(t, "systemd/slackgate.service")) {
		if cmd, ok := strings.CutPrefix(line, "#   "); ok {
			steps = append(steps, strings.TrimSpace(cmd))
		} else if !strings.HasPrefix(line, "#") {
			break
		}
	}
	script := strings.Join(steps, "\n")
	if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("the steps do not parse as shell: %v\n%s\n%s", err, out, script)
	}
	workdir := envExample(t, "slackgate.env.example", "CLAUDE_WORKDIR")
	order := func(first, then string) {
		t.Helper()
		i, j := strings.Index(script, first), strings.Index(script, then)
		if i < 0 || j < 0 || i > j {
			t.Errorf("the steps do not %q before %q:\n%s", first, then, script)
		}
	}
	order("useradd --create-home claude", "chown -R claude: "+workdir)
	order("git clone ", "chown -R claude: "+workdir)
	order("install -D -m 0600 deploy/slackgate.env.example /etc/slackgate/slackgate.env", "systemctl enable")
	order("npm install -g @anthropic-ai/claude-code@"+pinnedCLI(t)+" ", "systemctl enable")
	order("systemctl daemon-reload", "systemctl enable --now slackgate")
	if !strings.Contains(script, "git clone https://example.com/your/repo.git "+workdir+" ") {
		t.Errorf("the steps do not put a repository at CLAUDE_WORKDIR=%s:\n%s", workdir, script)
	}
}
