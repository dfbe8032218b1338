# slackgate: `make run` runs it, `make test` tests it (installing what it needs).
SHELL := bash
.SHELLFLAGS := -euo pipefail -c

# The Claude Code CLI the tests run against; 2.1.197 must keep working too:
#   make test CLAUDE_CODE_VERSION=2.1.197
CLAUDE_CODE_VERSION ?= 2.1.330
GO ?= go
# An execution count, not a duration: with a duration, Go 1.26's fuzz
# coordinator can fail a target with "context deadline exceeded" and no
# crasher when the deadline races a busy worker (golang/go#75804, fixed in
# Go 1.27); a count has no deadline to race.
FUZZTIME ?= 10000x
# Each input that reaches new code is minimized before it joins the cached
# corpus, by default for up to 60 s: with cards costing more the longer
# their input, that was most of the fuzz stage (minutes at 0 execs/s). A
# count bounds it; every new input and every crasher is still kept (a
# crasher less shrunk), and the fuzzing itself is FUZZTIME as before.
FUZZMINIMIZE ?= 100x
# staticcheck, pinned (v0.8.2 is release 2026.2.2, which knows Go 1.26);
# installed from the Go module proxy into the git-ignored .cache/ when missing.
STATICCHECK_VERSION ?= v0.8.2
TOOLS ?= $(CURDIR)/.cache/tools
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.PHONY: all build run doctor test test-go vet-untested test-cli-197 fuzz bench lint gofmt vet tidy staticcheck claude-code cards

all: build

# CGO_ENABLED=0, as deploy/Dockerfile builds it: a cgo binary cannot clear
# ambient capabilities (systemd's AmbientCapabilities=) on all its threads,
# so it refuses to start holding them.
#
# `slackgate version` prints VERSION and COMMIT: git's word for the
# checkout, stamped with -ldflags, since a go build told -buildvcs=false
# (as GOFLAGS may be) records no commit of its own.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o bin/slackgate ./cmd/slackgate

# What make run and make doctor run slackgate with: .env's settings, and,
# without CLAUDE_BIN or `claude` on PATH, the pinned CLI in .cache/.
DOTENV = if [ -f .env ]; then set -a; . ./.env; set +a; fi
PINNED_CLI = $(CURDIR)/.cache/claude-code/$(CLAUDE_CODE_VERSION)/node_modules/@anthropic-ai/claude-code/bin/claude.exe
NO_CLI = [ -z "$${CLAUDE_BIN:-}" ] && ! command -v claude >/dev/null

## run: slackgate on this machine (Slack + Claude Code worker in one process).
## It sources .env first when there is one (see deploy/slackgate.env.example).
## Without CLAUDE_BIN and without `claude` on PATH it uses the pinned CLI,
## installing it first (minutes) once the settings check out offline.
run: build
	$(DOTENV); \
	if $(NO_CLI); then \
		if [ ! -x "$(PINNED_CLI)" ]; then \
			out="$$(./bin/slackgate doctor -offline run 2>&1)" || { echo "$$out" >&2; exit 1; }; fi; \
		export CLAUDE_BIN="$$(.ci/claude-code.sh $(CLAUDE_CODE_VERSION))"; fi; \
	exec ./bin/slackgate run

## doctor: slackgate doctor as make run would start slackgate (.env, the
## pinned CLI when make run installed it); DOCTOR=bot or worker for those.
doctor: build
	$(DOTENV); \
	if $(NO_CLI) && [ -x "$(PINNED_CLI)" ]; then export CLAUDE_BIN="$(PINNED_CLI)"; fi; \
	exec ./bin/slackgate doctor $(DOCTOR)

## claude-code: install the pinned CLI into .cache/ and print its path.
claude-code:
	@.ci/claude-code.sh $(CLAUDE_CODE_VERSION)

## test: the lint gates, race tests (the architecture and function-length
## tests among them) against the real CLI and a private redis, fuzz briefly.
#
# go vet runs inside test-go (-vet=all): it then reads the race build's
# export data instead of compiling every package a second time, which on
# a fresh machine was a minute of the run. go test vets only packages
# with tests, so vet-untested covers the rest.
test: gofmt tidy staticcheck vet-untested
	CLAUDE_BIN="$$(.ci/claude-code.sh $(CLAUDE_CODE_VERSION))" \
	CLAUDE_BIN_197="$$(.ci/claude-code.sh 2.1.197)" \
	SLACKGATE_REQUIRE_INTEGRATION=1 \
	.ci/with-redis.sh $(MAKE) --no-print-directory test-go test-cli-197 fuzz

# -parallel 4 on 2 cores: the end-to-end tests mostly wait (on the CLI,
# on Slack's pacing, on a claim to lapse), so twice the default lets
# others run while one waits.
TEST_PARALLEL ?= 4

test-go:
	$(GO) test -race -vet=all -count=1 -parallel $(TEST_PARALLEL) -timeout 12m ./...

vet-untested:
	@pkgs="$$($(GO) list -f '{{if not (or .TestGoFiles .XTestGoFiles)}}{{.ImportPath}}{{end}}' ./...)"; \
	if [ -n "$$pkgs" ]; then $(GO) vet $$pkgs; fi

# The CLI the protocol reference was verified on: the relay suite and the
# end-to-end tests whose subject is what the CLI does (its prompts of every
# kind, the settings and environment it reads, resuming, modes, the policy
# on what it asks, MCP) run against it too (relaytest runs both versions
# itself). The end-to-end tests whose subject is slackgate's own side (who
# may act, the audit trail, reach, faults, the store, doctor, lockdown of
# slackgate's process) meet the CLI only as the other tests do, and the run
# above has passed them. Not the hook mode's tests either: 2.1.197 never
# calls a settings-file PermissionRequest hook in -p mode (it goes on
# without asking), so `slackgate hook` needs a newer CLI
# (deploy/claude/README.md). Nor the URL-mode elicitation test: 2.1.197's
# MCP client does not offer URL elicitations (form ones work on both).
CLI_197_FILES := cards_e2e questions_e2e plan_e2e elicit_e2e mcp_e2e policy_e2e policyagree_e2e settings_e2e \
	mode_e2e restart_e2e start_e2e credential_e2e env_e2e cardbound_e2e guards_e2e answers_e2e
CLI_197_TESTS = $(shell cd cmd/slackgate && sed -nE 's/^func (Test[A-Za-z0-9_]+).*/\1/p' $(addsuffix _test.go,$(CLI_197_FILES)) | paste -sd'|')
test-cli-197:
	export CLAUDE_BIN="$$CLAUDE_BIN_197"; \
	$(GO) test -race -vet=off -count=1 -parallel $(TEST_PARALLEL) -timeout 10m -skip '^TestConn' ./relay & relay=$$!; \
	$(GO) test -race -vet=off -count=1 -parallel $(TEST_PARALLEL) -timeout 10m -run '^($(CLI_197_TESTS))$$' -skip '^TestHook.*(Slack|Session|Model)|^TestElicitationLink' ./cmd/slackgate; \
	wait $$relay

# Each fuzz target runs briefly: the wire decoder, the card, thread-line
# and audit-line renderers (never over Slack's limits, never an unescaped mention or an
# invisible character), the Slack payload decoders, and the policy file's
# shell reader (an allow match means every part matched; against real
# bash, nothing bash runs or writes is allowed) and parser. A target may
# name its own count (PKG:TARGET:COUNT): each bash run costs a process.
FUZZ_TARGETS := relay:FuzzDecodeLine blocks:FuzzCard blocks:FuzzEventLine blocks:FuzzAuditLine blocks:FuzzDecodeBlockActions blocks:FuzzDecodeViewSubmission blocks:FuzzVisible bot/policy:FuzzShell bot/policy:FuzzParse bot/policy:FuzzReaderAgainstBash:3000x
fuzz:
	for t in $(FUZZ_TARGETS); do \
		IFS=: read -r pkg target count <<< "$$t"; \
		$(GO) test -vet=off -run '^$$' -fuzz "^$$target$$" -fuzztime "$${count:-$(FUZZTIME)}" -fuzzminimizetime $(FUZZMINIMIZE) ./$$pkg || exit 1; \
	done

## lint: gofmt, go vet, go.mod/go.sum tidy, staticcheck.
lint: gofmt vet tidy staticcheck

gofmt:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi

vet:
	$(GO) vet ./...

# Fails, printing the diff, when `go mod tidy` would change go.mod or go.sum.
tidy:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy" >&2; exit 1; }

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN="$(dir $@)" $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## bench: the store round trip on both backends (figures go in the
## benchmarks' doc comments).
bench:
	CLAUDE_BIN="$$(.ci/claude-code.sh $(CLAUDE_CODE_VERSION))" \
	.ci/with-redis.sh $(GO) test -run '^$$' -bench . -benchmem ./store/...

## cards: regenerate the golden files (the realistic and team sets among
## them) and, when cardview (a phone renderer that approximates Slack's
## app, not part of this repository) is on PATH or CARDVIEW names it, and
## chromium is installed, measure every family a person reads on a phone
## (CARD_FAMILIES) on a 375 px screen: where Approve/Deny end (target:
## above 553 px, an iPhone SE's first screen) and where a settled one's
## outcome starts (final_* and *_settled; target: top 150 px). Without
## them it only regenerates, and says so; make test never needs them.
CARDVIEW ?= $(shell command -v cardview 2>/dev/null)
CARD_FAMILIES := card_*.golden.json final_*.golden.json copy_*.golden.json reminder_*.golden.json \
	escalation_*.golden.json home_waiting_*.golden.json status_mode_*.golden.json event_mode_*.golden.json \
	event_grant_*.golden.json modal_allow_*.golden.json
cards:
	$(GO) test -count=1 -run '^TestGolden' ./blocks -update
	$(GO) test -count=1 -run '^(TestGolden|TestEveryGoldenFileIsValid)' ./blocks
	@if [ -z "$(CARDVIEW)" ]; then \
		echo "cards: regenerated; not measured: no cardview on PATH (or set CARDVIEW=/path/to/cardview)"; \
	elif ! command -v $${CHROMIUM:-chromium} >/dev/null 2>&1; then \
		echo "cards: regenerated; not measured: cardview needs chromium (or set CHROMIUM)"; \
	else \
		cd blocks/testdata && $(CARDVIEW) measure $(CARD_FAMILIES) | tee /dev/stderr | \
		awk '/primary_bottom=[0-9]/ { split($$4, p, "="); if (p[2] + 0 > 553) { print "cards: " $$1 " Approve ends at " p[2] " px, below 553"; bad = 1 } } \
		     /danger_bottom=[0-9]/ { split($$5, d, "="); if (d[2] + 0 > 553) { print "cards: " $$1 " Deny ends at " d[2] " px, below 553"; bad = 1 } } \
		     /^(final_|[^ ]*_settled)[^ ]* .*outcome_top=[0-9]/ { split($$6, o, "="); if (o[2] + 0 > 150) { print "cards: " $$1 " outcome starts at " o[2] " px, below 150"; bad = 1 } } \
		     END { exit bad }'; \
	fi
