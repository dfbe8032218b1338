package blocks

import (
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func txt(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}
func md(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func opt(v, t string) *slack.OptionBlockObject { return slack.NewOptionBlockObject(v, txt(t), nil) }

func opts(n int) []*slack.OptionBlockObject {
	out := make([]*slack.OptionBlockObject, n)
	for i := range out {
		out[i] = opt(strings.Repeat("v", 1)+string(rune('a'+i%26))+strings.Repeat("x", i/26), "option")
	}
	return out
}

func btn(id, label string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(id, "v", txt(label))
}

func sectionN(n int) []slack.Block {
	out := make([]slack.Block, n)
	for i := range out {
		out[i] = slack.NewSectionBlock(md("hi"), nil, nil)
	}
	return out
}

func actions(els ...slack.BlockElement) []slack.Block {
	return []slack.Block{slack.NewActionBlock("", els...)}
}

func ptr[T any](v T) *T { return &v }

func TestValidateMessageAcceptsAWellFormedMessage(t *testing.T) {
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("pick"), "sel", opts(3)...)
	sel.InitialOption = opt("va", "option")
	bs := []slack.Block{
		slack.NewHeaderBlock(txt("Header")),
		slack.NewSectionBlock(md("*hi* <@U1>"), []*slack.TextBlockObject{md("a"), md("b")}, slack.NewAccessory(btn("acc", "Go"))),
		slack.NewContextBlock("ctx", md("small"), txt("print")),
		slack.NewActionBlock("act", btn("a", "Approve").WithStyle(slack.StylePrimary), btn("b", "Deny").WithStyle(slack.StyleDanger), sel,
			slack.NewCheckboxGroupsBlockElement("cb", opts(10)...)),
		slack.NewDividerBlock(),
		slack.NewMarkdownBlock("", "**markdown**"),
	}
	if err := ValidateMessage("fallback", bs); err != nil {
		t.Fatalf("ValidateMessage: %v", err)
	}
}

// TestValidateMessageEnforcesEachLimit has one failing case per limit: the
// error must name the path and the limit.
func TestValidateMessageEnforcesEachLimit(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	confirm := func(title, text, ok, deny string) *slack.ButtonBlockElement {
		return btn("c", "Go").WithConfirm(slack.NewConfirmationBlockObject(txt(title), txt(text), txt(ok), txt(deny)))
	}
	multi := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, txt("p"), "m", opts(2)...)
	multi.MaxSelectedItems = ptr(0)
	badInitial := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opts(2)...)
	badInitial.InitialOption = opt("nope", "option")
	badInitials := slack.NewCheckboxGroupsBlockElement("c", opts(2)...)
	badInitials.InitialOptions = []*slack.OptionBlockObject{opt("nope", "x")}
	input := func(el slack.BlockElement) []slack.Block {
		return []slack.Block{slack.NewInputBlock("in", txt("label"), nil, el)}
	}
	pti := func(min, max int, initial string) *slack.PlainTextInputBlockElement {
		e := slack.NewPlainTextInputBlockElement(nil, "p")
		e.MinLength, e.MaxLength, e.InitialValue = min, max, initial
		return e
	}
	groups := slack.NewOptionsGroupSelectBlockElement(slack.OptTypeStatic, txt("p"), "g",
		slack.NewOptionGroupBlockElement(txt(long(76)), opts(2)...))
	bothOptsAndGroups := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opts(2)...)
	bothOptsAndGroups.OptionGroups = []*slack.OptionGroupBlockObject{slack.NewOptionGroupBlockElement(txt("g"), opts(2)...)}
	tooManyGroups := slack.NewOptionsGroupSelectBlockElement(slack.OptTypeStatic, txt("p"), "g")
	for i := 0; i < 101; i++ {
		tooManyGroups.OptionGroups = append(tooManyGroups.OptionGroups, slack.NewOptionGroupBlockElement(txt("g"), opts(1)...))
	}
	emojiMrkdwn := md("x")
	emojiMrkdwn.Emoji = ptr(true)

	tests := []struct {
		name string
		text string
		bs   []slack.Block
		want string
	}{
		{"empty fallback text", " ", sectionN(1), "text: empty fallback"},
		{"fallback text over 40000", long(40001), sectionN(1), "text: 40001 > 40000 chars"},
		{"more than 50 blocks", "t", sectionN(51), "blocks: 51 > 50 blocks"},
		{"section text over 3000", "t", []slack.Block{slack.NewSectionBlock(md(long(3001)), nil, nil)}, "blocks[0].text: 3001 > 3000 chars"},
		{"section text counted in runes", "t", []slack.Block{slack.NewSectionBlock(md(strings.Repeat("é", 3001)), nil, nil)}, "blocks[0].text: 3001 > 3000 chars"},
		{"empty text object", "t", []slack.Block{slack.NewSectionBlock(md(""), nil, nil)}, "blocks[0].text: empty text"},
		{"section without text or fields", "t", []slack.Block{&slack.SectionBlock{Type: slack.MBTSection}}, "blocks[0]: a section needs text or fields"},
		{"more than 10 fields", "t", []slack.Block{slack.NewSectionBlock(nil, []*slack.TextBlockObject{md("1"), md("2"), md("3"), md("4"), md("5"), md("6"), md("7"), md("8"), md("9"), md("10"), md("11")}, nil)}, "blocks[0].fields: 11 > 10 fields"},
		{"field over 2000", "t", []slack.Block{slack.NewSectionBlock(nil, []*slack.TextBlockObject{md(long(2001))}, nil)}, "blocks[0].fields[0]: 2001 > 2000 chars"},
		{"bad text type", "t", []slack.Block{slack.NewSectionBlock(&slack.TextBlockObject{Type: "html", Text: "x"}, nil, nil)}, `blocks[0].text.type: "html"`},
		{"emoji on mrkdwn", "t", []slack.Block{slack.NewSectionBlock(emojiMrkdwn, nil, nil)}, "blocks[0].text.emoji: not allowed on mrkdwn"},
		{"header over 150", "t", []slack.Block{slack.NewHeaderBlock(txt(long(151)))}, "blocks[0].text: 151 > 150 chars"},
		{"header in mrkdwn", "t", []slack.Block{slack.NewHeaderBlock(md("x"))}, "blocks[0].text.type: mrkdwn where only plain_text"},
		{"context over 10 elements", "t", []slack.Block{slack.NewContextBlock("", md("1"), md("2"), md("3"), md("4"), md("5"), md("6"), md("7"), md("8"), md("9"), md("10"), md("11"))}, "blocks[0].elements: 11 > 10 elements"},
		{"empty context", "t", []slack.Block{slack.NewContextBlock("")}, "blocks[0].elements: 0 < 1 elements"},
		{"context and actions blocks that fit are valid", "t", []slack.Block{slack.NewContextBlock("", md("a")), slack.NewActionBlock("", btn("a", "b"))}, ""},
		{"more than 25 action elements", "t", actions(func() []slack.BlockElement {
			var els []slack.BlockElement
			for i := 0; i < 26; i++ {
				els = append(els, btn("b"+string(rune('a'+i)), "x"))
			}
			return els
		}()...), "blocks[0].elements: 26 > 25 elements"},
		{"empty actions", "t", actions(), "blocks[0].elements: 0 < 1 elements"},
		{"duplicate action_id in one block", "t", actions(btn("a", "x"), btn("a", "y")), `blocks[0].elements[1].action_id: duplicate action_id "a"`},
		{"button text over 75", "t", actions(btn("a", long(76))), "blocks[0].elements[0].text: 76 > 75 chars"},
		{"button text in mrkdwn", "t", actions(slack.NewButtonBlockElement("a", "v", md("x"))), "blocks[0].elements[0].text.type: mrkdwn"},
		{"button without text", "t", actions(&slack.ButtonBlockElement{Type: slack.METButton, ActionID: "a"}), "blocks[0].elements[0].text: missing"},
		{"button value over 2000", "t", actions(slack.NewButtonBlockElement("a", long(2001), txt("x"))), "blocks[0].elements[0].value: 2001 > 2000 chars"},
		{"button url over 3000", "t", actions(btn("a", "x").WithURL("https://" + long(2993))), "blocks[0].elements[0].url: 3001 > 3000 chars"},
		{"button accessibility label over 75", "t", actions(func() *slack.ButtonBlockElement { b := btn("a", "x"); b.AccessibilityLabel = long(76); return b }()), "accessibility_label: 76 > 75 chars"},
		{"button style unknown", "t", actions(btn("a", "x").WithStyle("green")), `blocks[0].elements[0].style: "green" is not primary or danger`},
		{"action_id over 255", "t", actions(btn(long(256), "x")), "blocks[0].elements[0].action_id: 256 > 255 chars"},
		{"block_id over 255", "t", []slack.Block{slack.NewSectionBlock(md("x"), nil, nil, slack.SectionBlockOptionBlockID(long(256)))}, "blocks[0].block_id: 256 > 255 chars"},
		{"duplicate block_id", "t", []slack.Block{slack.NewDividerBlock(), slack.NewSectionBlock(md("x"), nil, nil, slack.SectionBlockOptionBlockID("same")), slack.NewSectionBlock(md("y"), nil, nil, slack.SectionBlockOptionBlockID("same"))}, `blocks[2].block_id: duplicate block_id "same"`},
		{"confirm title over 100", "t", actions(confirm(long(101), "t", "ok", "no")), "blocks[0].elements[0].confirm.title: 101 > 100 chars"},
		{"confirm text over 300", "t", actions(confirm("t", long(301), "ok", "no")), "blocks[0].elements[0].confirm.text: 301 > 300 chars"},
		{"confirm button over 30", "t", actions(confirm("t", "t", long(31), "no")), "blocks[0].elements[0].confirm.confirm: 31 > 30 chars"},
		{"confirm deny over 30", "t", actions(confirm("t", "t", "ok", long(31))), "blocks[0].elements[0].confirm.deny: 31 > 30 chars"},
		{"select over 100 options", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opts(101)...)), "blocks[0].elements[0].options: 101 > 100 options"},
		{"select without options", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s")), "blocks[0].elements[0]: neither options nor option_groups"},
		{"select with options and groups", "t", actions(bothOptsAndGroups), "blocks[0].elements[0]: both options and option_groups"},
		{"more than 100 option groups", "t", actions(tooManyGroups), "blocks[0].elements[0].option_groups: 101 > 100 option groups"},
		{"option group label over 75", "t", actions(groups), "blocks[0].elements[0].option_groups[0].label: 76 > 75 chars"},
		{"select placeholder over 150", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt(long(151)), "s", opts(2)...)), "blocks[0].elements[0].placeholder: 151 > 150 chars"},
		{"option text over 75", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opt("v", long(76)))), "blocks[0].elements[0].options[0].text: 76 > 75 chars"},
		{"option value over 150", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opt(long(151), "x"))), "blocks[0].elements[0].options[0].value: 151 > 150 chars"},
		{"option description over 75", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", slack.NewOptionBlockObject("v", txt("x"), txt(long(76))))), "blocks[0].elements[0].options[0].description: 76 > 75 chars"},
		{"option url outside overflow", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", &slack.OptionBlockObject{Text: txt("x"), Value: "v", URL: "https://x"})), "blocks[0].elements[0].options[0].url: url is allowed on overflow options only"},
		{"duplicate option value", "t", actions(slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("p"), "s", opt("v", "a"), opt("v", "b"))), `blocks[0].elements[0].options[1].value: duplicate option value "v"`},
		{"initial option not among options", "t", actions(badInitial), `blocks[0].elements[0].initial_option: value "nope" is not one of the options`},
		{"initial options not among options", "t", actions(badInitials), `blocks[0].elements[0].initial_options[0]: value "nope"`},
		{"multi select max_selected_items below 1", "t", actions(multi), "blocks[0].elements[0].max_selected_items: 0 < 1"},
		{"checkboxes over 10 options", "t", actions(slack.NewCheckboxGroupsBlockElement("c", opts(11)...)), "blocks[0].elements[0].options: 11 > 10 options"},
		{"radio buttons over 10 options", "t", actions(slack.NewRadioButtonsBlockElement("r", opts(11)...)), "blocks[0].elements[0].options: 11 > 10 options"},
		{"overflow over 5 options", "t", actions(slack.NewOverflowBlockElement("o", opts(6)...)), "blocks[0].elements[0].options: 6 > 5 options"},
		{"element not allowed in actions", "t", actions(slack.NewPlainTextInputBlockElement(nil, "p")), `blocks[0].elements[0].type: "plain_text_input" is not allowed here`},
		{"plain_text_input max_length over 3000", "t", input(pti(0, 3001, "")), "blocks[0].element.max_length: 3001 is not within 1..3000"},
		{"plain_text_input min_length over 3000", "t", input(pti(3001, 0, "")), "blocks[0].element.min_length: 3001 is not within 0..3000"},
		{"plain_text_input min over max", "t", input(pti(20, 10, "")), "blocks[0].element: min_length 20 > max_length 10"},
		{"plain_text_input initial value over max", "t", input(pti(0, 5, "toolong")), "blocks[0].element.initial_value: 7 > 5 chars"},
		{"input label over 2000", "t", []slack.Block{slack.NewInputBlock("in", txt(long(2001)), nil, pti(0, 0, ""))}, "blocks[0].label: 2001 > 2000 chars"},
		{"input hint over 2000", "t", []slack.Block{slack.NewInputBlock("in", txt("l"), txt(long(2001)), pti(0, 0, ""))}, "blocks[0].hint: 2001 > 2000 chars"},
		{"input without element", "t", []slack.Block{&slack.InputBlock{Type: slack.MBTInput, Label: txt("l")}}, "blocks[0].element: missing"},
		{"markdown blocks over 12000 together", "t", []slack.Block{slack.NewMarkdownBlock("", long(6001)), slack.NewMarkdownBlock("", long(6000))}, "blocks: markdown blocks hold 12001 > 12000 chars together"},
		{"empty rich_text", "t", []slack.Block{slack.NewRichTextBlock("")}, "blocks[0].elements: empty"},
		{"rich_text list indent over 8", "t", []slack.Block{slack.NewRichTextBlock("", &slack.RichTextList{Type: slack.RTEList, Style: slack.RTEListBullet, Indent: 9, Elements: []slack.RichTextElement{}})}, "blocks[0].elements[0].indent: 9 is not within 0..8"},
		{"unknown block type", "t", []slack.Block{&slack.UnknownBlock{Type: "sparkles"}}, `blocks[0].type: unknown block type "sparkles"`},
		{"element not allowed in an input", "t", input(btn("b", "x")), `blocks[0].element.type: "button" is not allowed here`},
		{"overflow option url over 3000", "t", actions(slack.NewOverflowBlockElement("o", &slack.OptionBlockObject{Text: txt("x"), Value: "v", URL: "https://" + long(2993)})), "blocks[0].elements[0].options[0].url: 3001 > 3000 chars"},
		{"image url over 3000", "t", []slack.Block{slack.NewImageBlock("https://"+long(2993), "alt", "", nil)}, "blocks[0].image_url: 3001 > 3000 chars"},
		{"image without alt text", "t", []slack.Block{slack.NewImageBlock("https://x/y.png", "", "", nil)}, "blocks[0].alt_text: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateMessage(tt.text, tt.bs)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a *ValidationError containing %q, got %v", tt.want, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidateViewEnforcesEachLimit(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	view := func(mut func(*slack.ModalViewRequest)) slack.ModalViewRequest {
		v := slack.ModalViewRequest{
			Type:   slack.VTModal,
			Title:  txt("Title"),
			Submit: txt("Send"),
			Close:  txt("Cancel"),
			Blocks: slack.Blocks{BlockSet: []slack.Block{
				slack.NewInputBlock("in", txt("Reason"), nil, slack.NewPlainTextInputBlockElement(nil, "v")),
			}},
			CallbackID: "cb",
		}
		if mut != nil {
			mut(&v)
		}
		return v
	}
	tests := []struct {
		name string
		v    slack.ModalViewRequest
		want string
	}{
		{"a well formed modal", view(nil), ""},
		{"not a modal", view(func(v *slack.ModalViewRequest) { v.Type = "home" }), `type: "home" is not "modal"`},
		{"missing title", view(func(v *slack.ModalViewRequest) { v.Title = nil }), "title: missing"},
		{"title over 24", view(func(v *slack.ModalViewRequest) { v.Title = txt(long(25)) }), "title: 25 > 24 chars"},
		{"submit over 24", view(func(v *slack.ModalViewRequest) { v.Submit = txt(long(25)) }), "submit: 25 > 24 chars"},
		{"close over 24", view(func(v *slack.ModalViewRequest) { v.Close = txt(long(25)) }), "close: 25 > 24 chars"},
		{"title in mrkdwn", view(func(v *slack.ModalViewRequest) { v.Title = md("x") }), "title.type: mrkdwn"},
		{"input without submit", view(func(v *slack.ModalViewRequest) { v.Submit = nil }), "submit: missing"},
		{"private_metadata over 3000", view(func(v *slack.ModalViewRequest) { v.PrivateMetadata = long(3001) }), "private_metadata: 3001 > 3000 chars"},
		{"callback_id over 255", view(func(v *slack.ModalViewRequest) { v.CallbackID = long(256) }), "callback_id: 256 > 255 chars"},
		{"external_id over 255", view(func(v *slack.ModalViewRequest) { v.ExternalID = long(256) }), "external_id: 256 > 255 chars"},
		{"more than 100 blocks", view(func(v *slack.ModalViewRequest) { v.Blocks.BlockSet = sectionN(101) }), "blocks: 101 > 100 blocks"},
		{"markdown block in a modal", view(func(v *slack.ModalViewRequest) {
			v.Blocks.BlockSet = append(v.Blocks.BlockSet, slack.NewMarkdownBlock("", "x"))
		}), "blocks[1]: markdown blocks are allowed in messages only"},
		{"view over 250 KB", view(func(v *slack.ModalViewRequest) {
			v.Blocks.BlockSet = nil
			for i := 0; i < 90; i++ {
				v.Blocks.BlockSet = append(v.Blocks.BlockSet, slack.NewSectionBlock(md(long(2900)), nil, nil))
			}
		}), "view: 2"},
		{"duplicate block_id in a view", view(func(v *slack.ModalViewRequest) {
			v.Blocks.BlockSet = append(v.Blocks.BlockSet, slack.NewInputBlock("in", txt("Again"), nil, slack.NewPlainTextInputBlockElement(nil, "v")))
		}), `blocks[1].block_id: duplicate block_id "in"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateView(tt.v)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v does not contain %q", err, tt.want)
			}
		})
	}
}
