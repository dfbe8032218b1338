// Command slackgate runs Claude Code headless and puts every permission
// prompt and question it asks into Slack, where people answer with a tap.
package main

func main() {}
