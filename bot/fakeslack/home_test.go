package fakeslack_test

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/bot/fakeslack"
)

func TestViewsPublishKeepsOneHomePerPersonWithinLimits(t *testing.T) {
	f := fakeslack.New(t, fakeslack.AllowRejections())
	f.AddUser("U1", "ann")
	api := client(f)
	ctx := testCtx(t)
	ok := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hello", false, false), nil, nil),
	}}}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: ok}); err != nil {
		t.Fatal(err)
	}
	if v, found := f.Home("U1"); !found || !v.HasText("hello") || v.Type != "home" {
		t.Fatalf("Home(U1) = %+v, %v", v, found)
	}
	var many []slack.Block
	for range 101 {
		many = append(many, slack.NewDividerBlock())
	}
	tooMany := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: many}}
	_, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: tooMany})
	if err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
		t.Errorf("a home view of 101 blocks: err = %v, want invalid_arguments", err)
	}
	if v, _ := f.Home("U1"); !v.HasText("hello") {
		t.Error("a rejected view replaced the published one")
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U404", View: ok}); err == nil {
		t.Error("a view for an unknown user was published")
	}
}
