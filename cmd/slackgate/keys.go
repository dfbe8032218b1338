package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// decisionKeys are the halves of the decision signing key pair a command
// holds: a bot signs every decision a person makes, a worker acts only on
// decisions that verify.
type decisionKeys struct {
	sign   ed25519.PrivateKey
	verify ed25519.PublicKey
	// generated: `slackgate run` made the pair in memory (see keepKeys).
	generated bool
}

const keygenHint = "run `slackgate keygen` to make a pair: DECISION_SIGNING_KEY goes to the bots, DECISION_VERIFY_KEY to the workers"

// parseSigningKey decodes DECISION_SIGNING_KEY: the base64 of a 32-byte
// Ed25519 seed.
func parseSigningKey(s string) (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("DECISION_SIGNING_KEY: want the base64 of a %d-byte Ed25519 seed; %s", ed25519.SeedSize, keygenHint)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// parseVerifyKey decodes DECISION_VERIFY_KEY: the base64 of a 32-byte
// Ed25519 public key.
func parseVerifyKey(s string) (ed25519.PublicKey, error) {
	pub, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("DECISION_VERIFY_KEY: want the base64 of a %d-byte Ed25519 public key; %s", ed25519.PublicKeySize, keygenHint)
	}
	return ed25519.PublicKey(pub), nil
}

// resolveKeys picks the keys cmd needs from cfg. `slackgate bot` needs the
// signing key and `slackgate worker` the verify key; `slackgate run` holds
// both halves, so it takes them when set (checking they are a pair) and
// otherwise makes a pair in memory (kept in DATA_DIR by keepKeys on the
// embedded store).
func resolveKeys(cmd string, cfg Config) (decisionKeys, error) {
	var k decisionKeys
	var err error
	if cfg.DecisionSigningKey != "" {
		if k.sign, err = parseSigningKey(cfg.DecisionSigningKey); err != nil {
			return k, err
		}
	}
	if cfg.DecisionVerifyKey != "" {
		if k.verify, err = parseVerifyKey(cfg.DecisionVerifyKey); err != nil {
			return k, err
		}
	}
	switch {
	case cmd == "bot" && k.sign == nil:
		return k, fmt.Errorf("slackgate bot signs every decision and needs DECISION_SIGNING_KEY; %s", keygenHint)
	case cmd == "worker" && k.verify == nil:
		return k, fmt.Errorf("slackgate worker acts only on signed decisions and needs DECISION_VERIFY_KEY; %s", keygenHint)
	case cmd != "run":
		return k, nil
	case k.sign == nil && k.verify != nil:
		return k, errors.New("DECISION_VERIFY_KEY is set without DECISION_SIGNING_KEY: `slackgate run` signs decisions too; set both (or neither, for a pair made at start)")
	case k.sign == nil:
		_, k.sign, err = ed25519.GenerateKey(rand.Reader)
		k.verify, k.generated = k.sign.Public().(ed25519.PublicKey), true
		return k, err
	case k.verify == nil:
		k.verify = k.sign.Public().(ed25519.PublicKey)
	case !bytes.Equal(k.verify, k.sign.Public().(ed25519.PublicKey)):
		return k, fmt.Errorf("DECISION_VERIFY_KEY is not the public half of DECISION_SIGNING_KEY; %s", keygenHint)
	}
	return k, nil
}

// keptKeyFile is where `slackgate run` on the embedded store keeps the
// pair it made, in DATA_DIR.
const keptKeyFile = "decision-signing-key"

// keepKeys makes a pair generated in memory outlive the process when the
// store does: `slackgate run` on the embedded store takes the pair kept in
// dataDir (the store's own directory, 0700 by then), or keeps the one it
// made there, 0600. Sessions, queued messages and remembered answers are
// signed, and a restart with a pair of its own would refuse all of them.
// Whoever can read dataDir can read the whole store too.
func keepKeys(k decisionKeys, dataDir string) (decisionKeys, error) {
	path := filepath.Join(dataDir, keptKeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return k, fmt.Errorf("keep the decision signing key in DATA_DIR: %w", err)
		}
		_, err = fmt.Fprintln(f, base64.StdEncoding.EncodeToString(k.sign.Seed()))
		err = errors.Join(err, f.Sync(), f.Close())
		if err != nil {
			return k, fmt.Errorf("keep the decision signing key in %s: %w", path, err)
		}
		k.generated = false
		return k, nil
	}
	if err != nil {
		return k, fmt.Errorf("read the decision signing key kept in DATA_DIR: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return k, fmt.Errorf("keep %s private: %w", path, err)
	}
	sign, err := parseSigningKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return k, fmt.Errorf("%s: %w", path, err)
	}
	return decisionKeys{sign: sign, verify: sign.Public().(ed25519.PublicKey)}, nil
}

// keygen prints a fresh decision signing key pair as environment lines.
func keygen(w io.Writer) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	_, err = fmt.Fprintf(w, "DECISION_SIGNING_KEY=%s\nDECISION_VERIFY_KEY=%s\n",
		base64.StdEncoding.EncodeToString(priv.Seed()), base64.StdEncoding.EncodeToString(pub))
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	return nil
}
