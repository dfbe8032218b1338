//go:build race

package main

// raceBuild: the fault tests build their slackgate binary with -race too.
const raceBuild = true
