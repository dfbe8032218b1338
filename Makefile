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

.PHONY: all build run test test-go test-cli-197 fuzz bench lint gofmt vet tidy staticcheck claude-code cards

all: build

# CGO_ENABLED=0, as deploy/Dockerfile builds it: a cgo binary cannot clear
# ambient capabilities (systemd's AmbientCapabilities=) on all its threads,
# so it refuses to start holding them.
build:
	CGO_ENABLED=0 $(GO) build -o bin/slackgate ./cmd/slackgate

## run: slackgate on this machine (Slack + Claude Code worker in one process).
## It sources .env first when there is one (see deploy/slackgate.env.example).
## Without CLAUDE_BIN and without `claude` on PATH it uses the pinned CLI.
run: build
	if [ -f .env ]; then set -a; . ./.env; set +a; fi; \
	if [ -z "$${CLAUDE_BIN:-}" ] && ! command -v claude >/dev/null; then \
		export CLAUDE_BIN="$$(.ci/claude-code.sh $(CLAUDE_CODE_VERSION))"; fi; \
	exec ./bin/slackgate run

## claude-code: install the pinned CLI into .cache/ and print its path.
claude-code:
	@.ci/claude-code.sh $(CLAUDE_CODE_VERSION)

## test: the lint gates, race tests (the architecture and function-length
## tests among them) against the real CLI and a private redis, fuzz briefly.
test: lint
	CLAUDE_BIN="$$(.ci/claude-code.sh $(CLAUDE_CODE_VERSION))" \
	CLAUDE_BIN_197="$$(.ci/claude-code.sh 2.1.197)" \
	SLACKGATE_REQUIRE_INTEGRATION=1 \
	.ci/with-redis.sh $(MAKE) --no-print-directory test-go test-cli-197 fuzz

# -parallel 4 on 2 cores: the end-to-end tests mostly wait (on the CLI,
# on Slack's pacing, on a claim to lapse), so twice the default lets
# others run while one waits.
TEST_PARALLEL ?= 4

test-go:
	$(GO) test -race -count=1 -parallel $(TEST_PARALLEL) -timeout 12m ./...

# The CLI the protocol reference was verified on: the relay and end-to-end
# suites run against it too (relaytest runs both versions itself). Not the
# hook mode's end-to-end tests: 2.1.197 never calls a settings-file
# PermissionRequest hook in -p mode (it goes on without asking), so `slackgate
# hook` needs a newer CLI (deploy/claude/README.md); they run on CLAUDE_CODE_VERSION above. Nor
# the URL-mode elicitation test: 2.1.197's MCP client does not offer URL
# elicitations, so a server cannot ask for one (form ones work on both). Nor
# the fault suite (TestFault*): it kills slackgate's own processes, Redis
# and Slack calls, none of which the CLI's version changes, and most of its
# two minutes is waiting out a dead bot's claim. Nor the tests that never
# start a CLI (CLI_FREE_TESTS), which the run above has already passed.
CLI_FREE_TESTS := ^TestConn|^TestAudit|^TestREADME|^TestMarkdown|^TestNoPath|^TestDocs|^TestPackage|^TestNoLong
test-cli-197:
	CLAUDE_BIN="$$CLAUDE_BIN_197" $(GO) test -race -count=1 -parallel $(TEST_PARALLEL) -timeout 10m -skip '^TestHook.*(Slack|Session|Model)|^TestElicitationLink|^TestFault|$(CLI_FREE_TESTS)' ./relay ./cmd/...

# Each fuzz target runs briefly: the wire decoder, the card, thread-line
# and audit-line renderers (never over Slack's limits, never an unescaped mention or an
# invisible character), the Slack payload decoders, and the policy file's
# shell reader (an allow match means every part matched) and parser.
FUZZ_TARGETS := relay:FuzzDecodeLine blocks:FuzzCard blocks:FuzzEventLine blocks:FuzzAuditLine blocks:FuzzDecodeBlockActions blocks:FuzzDecodeViewSubmission blocks:FuzzVisible bot/policy:FuzzShell bot/policy:FuzzParse
fuzz:
	for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./$${t%%:*} || exit 1; \
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

## cards: regenerate the card golden files (the realistic set among them)
## and, when cardview (a phone renderer that approximates Slack's app, not
## part of this repository) is on PATH or CARDVIEW names it, and chromium
## is installed, measure them on a 375 px phone: where Approve/Deny end
## (target: above 553 px, an iPhone SE's first screen) and where a settled
## card's outcome starts (target: top 150 px). Without them it only
## regenerates, and says so; make test never needs them.
CARDVIEW ?= $(shell command -v cardview 2>/dev/null)
cards:
	$(GO) test -count=1 -run '^TestGoldenCards$$' ./blocks -update
	$(GO) test -count=1 -run '^(TestGolden|TestEveryGoldenFileIsValid)' ./blocks
	@if [ -z "$(CARDVIEW)" ]; then \
		echo "cards: regenerated; not measured: no cardview on PATH (or set CARDVIEW=/path/to/cardview)"; \
	elif ! command -v $${CHROMIUM:-chromium} >/dev/null 2>&1; then \
		echo "cards: regenerated; not measured: cardview needs chromium (or set CHROMIUM)"; \
	else \
		cd blocks/testdata && $(CARDVIEW) measure card_*.golden.json final_*.golden.json | tee /dev/stderr | \
		awk '/primary_bottom=[0-9]/ { split($$4, p, "="); if (p[2] + 0 > 553) { print "cards: " $$1 " Approve ends at " p[2] " px, below 553"; bad = 1 } } \
		     /danger_bottom=[0-9]/ { split($$5, d, "="); if (d[2] + 0 > 553) { print "cards: " $$1 " Deny ends at " d[2] " px, below 553"; bad = 1 } } \
		     /^final_.*outcome_top=[0-9]/ { split($$6, o, "="); if (o[2] + 0 > 150) { print "cards: " $$1 " outcome starts at " o[2] " px, below 150"; bad = 1 } } \
		     END { exit bad }'; \
	fi
