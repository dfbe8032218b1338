package blocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// Slack's limits that the validator enforces and the renderers respect, as
// Slack's Block Kit reference documents them (docs.slack.dev, the block
// and element pages). Lengths count runes.
const (
	MaxMessageBlocks  = 50
	MaxViewBlocks     = 100
	MaxText           = 3000   // any text object
	MaxSectionFields  = 10     // fields per section
	MaxFieldText      = 2000   // one section field
	MaxHeaderText     = 150    // header block, plain_text
	MaxButtonText     = 75     // button label, plain_text
	MaxButtonValue    = 2000   // button value
	MaxURL            = 3000   // button / option url
	MaxAccessLabel    = 75     // button accessibility_label
	MaxID             = 255    // action_id, block_id, callback_id, external_id
	MaxActionElements = 25     // elements in an actions block
	MaxContextElems   = 10     // elements in a context block
	MaxOptions        = 100    // static_select options / option_groups
	MaxPlaceholder    = 150    // select / input placeholder
	MaxOptionText     = 75     // option text and description
	MaxOptionValue    = 150    // option value
	MaxOverflowOpts   = 5      // overflow menu options
	MaxChoiceOpts     = 10     // checkboxes / radio_buttons options
	MaxInputLength    = 3000   // plain_text_input max_length / min_length
	MaxLabel          = 2000   // input label / hint
	MaxConfirmTitle   = 100    // confirm dialog title
	MaxConfirmText    = 300    // confirm dialog text
	MaxConfirmButton  = 30     // confirm dialog confirm / deny
	MaxModalTitle     = 24     // modal title / submit / close
	MaxPrivateMeta    = 3000   // view private_metadata
	MaxViewBytes      = 250000 // marshalled view (Slack says 250 KB; we stay under 250,000 bytes)
	MaxMarkdownTotal  = 12000  // all markdown blocks of one message together
	MaxMessageText    = 40000  // top-level text; Slack truncates above, we reject
	MaxUpdateText     = 4000   // chat.update rejects longer text (msg_too_long); the renderers stay under it
	MaxImageAltText   = 2000   // image alt_text / title
	MaxRichTextIndent = 8      // rich_text_list indent
)

// ValidationError lists every limit a message or view breaks, each as
// "path: problem" (for example "blocks[3].elements[1].text: 81 > 75 chars").
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return "blocks: invalid Block Kit: " + strings.Join(e.Problems, "; ")
}

// ValidateMessage checks a message (its top-level text fallback and its
// blocks) against Slack's limits. Slack accepts an empty text when blocks are
// present, but notifications and screen readers show only the text, so an
// empty fallback is an error here. It returns a *ValidationError.
func ValidateMessage(text string, bs []slack.Block) error {
	v := &validator{surface: surfaceMessage}
	switch n := runes(text); {
	case strings.TrimSpace(text) == "":
		v.addf("text", "empty fallback text (notifications show only the text)")
	case n > MaxMessageText:
		v.addf("text", "%d > %d chars", n, MaxMessageText)
	}
	raw, err := json.Marshal(bs)
	if err != nil {
		return fmt.Errorf("blocks: marshal message blocks: %w", err)
	}
	var list []any
	if err := unmarshal(raw, &list); err != nil {
		return fmt.Errorf("blocks: decode message blocks: %w", err)
	}
	v.blockList("blocks", list, MaxMessageBlocks)
	if v.markdownTotal > MaxMarkdownTotal {
		v.addf("blocks", "markdown blocks hold %d > %d chars together", v.markdownTotal, MaxMarkdownTotal)
	}
	return v.err()
}

// ValidateView checks a modal view against Slack's limits. It returns a
// *ValidationError.
func ValidateView(mv slack.ModalViewRequest) error {
	v := &validator{surface: surfaceModal}
	raw, err := json.Marshal(mv)
	if err != nil {
		return fmt.Errorf("blocks: marshal view: %w", err)
	}
	if len(raw) > MaxViewBytes {
		v.addf("view", "%d > %d bytes", len(raw), MaxViewBytes)
	}
	var obj map[string]any
	if err := unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("blocks: decode view: %w", err)
	}
	if t, _ := obj["type"].(string); t != string(slack.VTModal) {
		v.addf("type", "%q is not \"modal\"", t)
	}
	v.text("title", obj["title"], MaxModalTitle, plainOnly|required)
	v.text("close", obj["close"], MaxModalTitle, plainOnly)
	v.text("submit", obj["submit"], MaxModalTitle, plainOnly)
	v.maxString("private_metadata", obj["private_metadata"], MaxPrivateMeta)
	v.maxString("callback_id", obj["callback_id"], MaxID)
	v.maxString("external_id", obj["external_id"], MaxID)
	list, _ := obj["blocks"].([]any)
	v.blockList("blocks", list, MaxViewBlocks)
	if v.inputs > 0 && obj["submit"] == nil {
		v.addf("submit", "missing: a modal with input blocks needs a submit button")
	}
	return v.err()
}

// ValidateHomeView checks an App Home view against Slack's limits (100
// blocks, like a modal, but no title or submit). It returns a
// *ValidationError.
func ValidateHomeView(hv slack.HomeTabViewRequest) error {
	v := &validator{surface: surfaceHome}
	raw, err := json.Marshal(hv)
	if err != nil {
		return fmt.Errorf("blocks: marshal home view: %w", err)
	}
	if len(raw) > MaxViewBytes {
		v.addf("view", "%d > %d bytes", len(raw), MaxViewBytes)
	}
	var obj map[string]any
	if err := unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("blocks: decode home view: %w", err)
	}
	if t, _ := obj["type"].(string); t != string(slack.VTHomeTab) {
		v.addf("type", "%q is not \"home\"", t)
	}
	v.maxString("private_metadata", obj["private_metadata"], MaxPrivateMeta)
	v.maxString("callback_id", obj["callback_id"], MaxID)
	v.maxString("external_id", obj["external_id"], MaxID)
	list, _ := obj["blocks"].([]any)
	v.blockList("blocks", list, MaxViewBlocks)
	return v.err()
}

type surface int

const (
	surfaceMessage surface = iota
	surfaceModal
	surfaceHome
)

type validator struct {
	surface       surface
	problems      []string
	blockIDs      map[string]string // block_id → path of its first use
	markdownTotal int
	inputs        int
}

func (v *validator) addf(path, format string, args ...any) {
	v.problems = append(v.problems, path+": "+fmt.Sprintf(format, args...))
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

func unmarshal(raw []byte, dst any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(dst)
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func at(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// object returns x as a JSON object, or reports problem at path.
func (v *validator) object(path string, x any, problem string) (map[string]any, bool) {
	m, ok := x.(map[string]any)
	if !ok {
		v.addf(path, "%s", problem)
	}
	return m, ok
}

func (v *validator) blockList(path string, list []any, max int) {
	if len(list) > max {
		v.addf(path, "%d > %d blocks", len(list), max)
	}
	v.blockIDs = map[string]string{}
	for i, b := range list {
		v.block(at(path, i), b)
	}
}

func (v *validator) blockID(path string, b map[string]any) {
	id, ok := b["block_id"].(string)
	if !ok {
		return
	}
	p := path + ".block_id"
	if id == "" {
		v.addf(p, "empty")
		return
	}
	if n := runes(id); n > MaxID {
		v.addf(p, "%d > %d chars", n, MaxID)
	}
	if first, dup := v.blockIDs[id]; dup {
		v.addf(p, "duplicate block_id %q (first used at %s)", id, first)
		return
	}
	v.blockIDs[id] = path
}

func (v *validator) block(path string, x any) {
	b, ok := v.object(path, x, "not a block object")
	if !ok {
		return
	}
	v.blockID(path, b)
	typ, _ := b["type"].(string)
	switch typ {
	case "section":
		v.section(path, b)
	case "header":
		v.text(path+".text", b["text"], MaxHeaderText, plainOnly|required)
	case "divider":
	case "context":
		els, _ := b["elements"].([]any)
		v.count(path+".elements", len(els), 1, MaxContextElems, "elements")
		for i, e := range els {
			v.contextElement(at(path+".elements", i), e)
		}
	case "actions":
		els, _ := b["elements"].([]any)
		v.count(path+".elements", len(els), 1, MaxActionElements, "elements")
		seen := map[string]bool{}
		for i, e := range els {
			p := at(path+".elements", i)
			v.element(p, e, actionsElements)
			v.uniqueActionID(p, e, seen)
		}
	case "input":
		v.inputs++
		v.text(path+".label", b["label"], MaxLabel, plainOnly|required)
		v.text(path+".hint", b["hint"], MaxLabel, plainOnly)
		v.element(path+".element", b["element"], inputElements)
	case "markdown":
		if v.surface != surfaceMessage {
			v.addf(path, "markdown blocks are allowed in messages only")
		}
		t, _ := b["text"].(string)
		if strings.TrimSpace(t) == "" {
			v.addf(path+".text", "empty")
		}
		v.markdownTotal += runes(t)
	case "rich_text":
		v.richText(path, b)
	case "image":
		v.image(path, b, true)
	case "":
		v.addf(path+".type", "missing")
	case "file", "video", "call", "table", "data_table", "data_visualization", "context_actions",
		"task_card", "plan", "alert", "card", "carousel", "container", "layout", "auth_provider":
		// Valid Block Kit we never emit; only the common checks apply.
	default:
		v.addf(path+".type", "unknown block type %q", typ)
	}
}

func (v *validator) count(path string, n, min, max int, what string) {
	switch {
	case n < min:
		v.addf(path, "%d < %d %s", n, min, what)
	case n > max:
		v.addf(path, "%d > %d %s", n, max, what)
	}
}

func (v *validator) section(path string, b map[string]any) {
	fields, _ := b["fields"].([]any)
	if b["text"] == nil && len(fields) == 0 {
		v.addf(path, "a section needs text or fields")
	}
	v.text(path+".text", b["text"], MaxText, 0)
	if len(fields) > MaxSectionFields {
		v.addf(path+".fields", "%d > %d fields", len(fields), MaxSectionFields)
	}
	for i, f := range fields {
		v.text(at(path+".fields", i), f, MaxFieldText, required)
	}
	if acc, ok := b["accessory"]; ok && acc != nil {
		v.element(path+".accessory", acc, accessoryElements)
	}
}

// text flags.
const (
	plainOnly = 1 << iota // only plain_text is allowed
	required              // the object must be present
)

// text checks a text object: type, non-empty, within max runes (and within
// the general 3000 for every text object).
func (v *validator) text(path string, x any, max int, flags int) {
	if x == nil {
		if flags&required != 0 {
			v.addf(path, "missing")
		}
		return
	}
	t, ok := v.object(path, x, "not a text object")
	if !ok {
		return
	}
	typ, _ := t["type"].(string)
	switch typ {
	case "plain_text":
	case "mrkdwn":
		if flags&plainOnly != 0 {
			v.addf(path+".type", "mrkdwn where only plain_text is allowed")
		}
		if _, ok := t["emoji"]; ok {
			v.addf(path+".emoji", "not allowed on mrkdwn text")
		}
	default:
		v.addf(path+".type", "%q is not plain_text or mrkdwn", typ)
	}
	s, _ := t["text"].(string)
	if strings.TrimSpace(s) == "" {
		v.addf(path, "empty text")
		return
	}
	if max > MaxText {
		max = MaxText
	}
	if n := runes(s); n > max {
		v.addf(path, "%d > %d chars", n, max)
	}
}

func (v *validator) maxString(path string, x any, max int) {
	s, _ := x.(string)
	if n := runes(s); n > max {
		v.addf(path, "%d > %d chars", n, max)
	}
}

func (v *validator) contextElement(path string, x any) {
	e, ok := v.object(path, x, "not an element object")
	if !ok {
		return
	}
	switch typ, _ := e["type"].(string); typ {
	case "plain_text", "mrkdwn":
		v.text(path, e, MaxText, 0)
	case "image":
		v.image(path, e, false)
	default:
		v.addf(path+".type", "%q is not allowed in a context block", typ)
	}
}

func (v *validator) image(path string, e map[string]any, block bool) {
	url, _ := e["image_url"].(string)
	_, file := e["slack_file"]
	if url == "" && !file {
		v.addf(path, "an image needs image_url or slack_file")
	}
	v.maxString(path+".image_url", e["image_url"], MaxURL)
	alt, _ := e["alt_text"].(string)
	if strings.TrimSpace(alt) == "" {
		v.addf(path+".alt_text", "empty")
	}
	v.maxString(path+".alt_text", e["alt_text"], MaxImageAltText)
	if block {
		v.text(path+".title", e["title"], MaxImageAltText, plainOnly)
	}
}

func (v *validator) richText(path string, b map[string]any) {
	els, _ := b["elements"].([]any)
	if len(els) == 0 {
		v.addf(path+".elements", "empty")
	}
	for i, x := range els {
		p := at(path+".elements", i)
		e, ok := v.object(p, x, "not an element object")
		if !ok {
			continue
		}
		switch typ, _ := e["type"].(string); typ {
		case "rich_text_section", "rich_text_preformatted", "rich_text_quote":
			if _, ok := e["elements"].([]any); !ok {
				v.addf(p+".elements", "missing")
			}
		case "rich_text_list":
			if _, ok := e["elements"].([]any); !ok {
				v.addf(p+".elements", "missing")
			}
			if n, ok := e["indent"].(json.Number); ok {
				if i, err := n.Int64(); err != nil || i < 0 || i > MaxRichTextIndent {
					v.addf(p+".indent", "%s is not within 0..%d", n, MaxRichTextIndent)
				}
			}
		default:
			v.addf(p+".type", "%q is not a rich_text element", typ)
		}
	}
}

// Element types allowed in each container (docs.slack.dev block reference).
var (
	actionsElements = set("button", "checkboxes", "datepicker", "datetimepicker", "overflow", "radio_buttons",
		"static_select", "external_select", "users_select", "conversations_select", "channels_select",
		"multi_static_select", "multi_external_select", "multi_users_select", "multi_conversations_select",
		"multi_channels_select", "timepicker", "workflow_button", "feedback_buttons", "icon_button")
	accessoryElements = set("button", "checkboxes", "datepicker", "image", "overflow", "radio_buttons",
		"static_select", "external_select", "users_select", "conversations_select", "channels_select",
		"multi_static_select", "multi_external_select", "multi_users_select", "multi_conversations_select",
		"multi_channels_select", "timepicker", "workflow_button")
	inputElements = set("checkboxes", "datepicker", "datetimepicker", "email_text_input", "file_input",
		"multi_static_select", "multi_external_select", "multi_users_select", "multi_conversations_select",
		"multi_channels_select", "number_input", "plain_text_input", "radio_buttons", "rich_text_input",
		"static_select", "external_select", "users_select", "conversations_select", "channels_select",
		"timepicker", "url_text_input")
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func (v *validator) uniqueActionID(path string, x any, seen map[string]bool) {
	e, _ := x.(map[string]any)
	id, _ := e["action_id"].(string)
	if id == "" {
		return
	}
	if seen[id] {
		v.addf(path+".action_id", "duplicate action_id %q in one block", id)
	}
	seen[id] = true
}

func (v *validator) element(path string, x any, allowed map[string]bool) {
	e, ok := v.object(path, x, "missing or not an element object")
	if !ok {
		return
	}
	typ, _ := e["type"].(string)
	if !allowed[typ] {
		v.addf(path+".type", "%q is not allowed here", typ)
		return
	}
	if id, ok := e["action_id"].(string); ok {
		if id == "" {
			v.addf(path+".action_id", "empty")
		} else if n := runes(id); n > MaxID {
			v.addf(path+".action_id", "%d > %d chars", n, MaxID)
		}
	}
	if c, ok := e["confirm"]; ok && c != nil {
		v.confirm(path+".confirm", c)
	}
	switch typ {
	case "button":
		v.button(path, e)
	case "static_select":
		v.placeholder(path, e)
		opts := v.selectOptions(path, e)
		if init, ok := e["initial_option"]; ok && init != nil {
			v.initialOption(path+".initial_option", init, opts)
		}
	case "multi_static_select":
		v.placeholder(path, e)
		opts := v.selectOptions(path, e)
		v.initialOptions(path, e, opts)
		v.maxSelected(path, e)
	case "external_select", "users_select", "conversations_select", "channels_select":
		v.placeholder(path, e)
	case "multi_external_select", "multi_users_select", "multi_conversations_select", "multi_channels_select":
		v.placeholder(path, e)
		v.maxSelected(path, e)
	case "checkboxes":
		opts := v.options(path+".options", e["options"], 1, MaxChoiceOpts, false)
		v.initialOptions(path, e, opts)
	case "radio_buttons":
		opts := v.options(path+".options", e["options"], 1, MaxChoiceOpts, false)
		if init, ok := e["initial_option"]; ok && init != nil {
			v.initialOption(path+".initial_option", init, opts)
		}
	case "overflow":
		v.options(path+".options", e["options"], 1, MaxOverflowOpts, true)
	case "plain_text_input":
		v.placeholder(path, e)
		v.plainTextInput(path, e)
	case "email_text_input", "url_text_input", "number_input", "datepicker", "timepicker", "rich_text_input":
		v.placeholder(path, e)
	}
}

func (v *validator) button(path string, e map[string]any) {
	v.text(path+".text", e["text"], MaxButtonText, plainOnly|required)
	v.maxString(path+".value", e["value"], MaxButtonValue)
	v.maxString(path+".url", e["url"], MaxURL)
	v.maxString(path+".accessibility_label", e["accessibility_label"], MaxAccessLabel)
	if s, ok := e["style"].(string); ok && s != "primary" && s != "danger" {
		v.addf(path+".style", "%q is not primary or danger", s)
	}
}

func (v *validator) placeholder(path string, e map[string]any) {
	v.text(path+".placeholder", e["placeholder"], MaxPlaceholder, plainOnly)
}

func (v *validator) confirm(path string, x any) {
	c, ok := v.object(path, x, "not a confirm object")
	if !ok {
		return
	}
	v.text(path+".title", c["title"], MaxConfirmTitle, plainOnly|required)
	v.text(path+".text", c["text"], MaxConfirmText, required)
	v.text(path+".confirm", c["confirm"], MaxConfirmButton, plainOnly|required)
	v.text(path+".deny", c["deny"], MaxConfirmButton, plainOnly|required)
	if s, ok := c["style"].(string); ok && s != "primary" && s != "danger" {
		v.addf(path+".style", "%q is not primary or danger", s)
	}
}

// selectOptions checks the options or option_groups of a static menu (exactly
// one of them) and returns every option value it offers.
func (v *validator) selectOptions(path string, e map[string]any) map[string]bool {
	opts, hasOpts := e["options"].([]any)
	groups, hasGroups := e["option_groups"].([]any)
	switch {
	case hasOpts && hasGroups:
		v.addf(path, "both options and option_groups")
	case !hasOpts && !hasGroups:
		v.addf(path, "neither options nor option_groups")
	}
	values := map[string]bool{}
	if hasOpts {
		for k := range v.options(path+".options", opts, 1, MaxOptions, false) {
			values[k] = true
		}
	}
	if hasGroups {
		v.count(path+".option_groups", len(groups), 1, MaxOptions, "option groups")
		for i, x := range groups {
			p := at(path+".option_groups", i)
			g, ok := v.object(p, x, "not an option group")
			if !ok {
				continue
			}
			v.text(p+".label", g["label"], MaxOptionText, plainOnly|required)
			for k := range v.options(p+".options", g["options"], 1, MaxOptions, false) {
				values[k] = true
			}
		}
	}
	return values
}

// options checks a list of option objects and returns their values.
func (v *validator) options(path string, x any, min, max int, overflow bool) map[string]bool {
	list, _ := x.([]any)
	v.count(path, len(list), min, max, "options")
	values := map[string]bool{}
	for i, o := range list {
		p := at(path, i)
		val := v.option(p, o, overflow)
		if values[val] {
			v.addf(p+".value", "duplicate option value %q", val)
		}
		values[val] = true
	}
	return values
}

func (v *validator) option(path string, x any, overflow bool) string {
	o, ok := v.object(path, x, "not an option object")
	if !ok {
		return ""
	}
	v.text(path+".text", o["text"], MaxOptionText, 0)
	v.text(path+".description", o["description"], MaxOptionText, 0)
	val, _ := o["value"].(string)
	if val == "" {
		v.addf(path+".value", "empty")
	}
	v.maxString(path+".value", o["value"], MaxOptionValue)
	if _, ok := o["url"]; ok {
		if !overflow {
			v.addf(path+".url", "url is allowed on overflow options only")
		}
		v.maxString(path+".url", o["url"], MaxURL)
	}
	return val
}

func (v *validator) initialOption(path string, x any, values map[string]bool) {
	val := v.option(path, x, false)
	if val != "" && !values[val] {
		v.addf(path, "value %q is not one of the options", val)
	}
}

func (v *validator) initialOptions(path string, e map[string]any, values map[string]bool) {
	list, _ := e["initial_options"].([]any)
	for i, o := range list {
		v.initialOption(at(path+".initial_options", i), o, values)
	}
}

func (v *validator) maxSelected(path string, e map[string]any) {
	n, ok := e["max_selected_items"].(json.Number)
	if !ok {
		return
	}
	if i, err := n.Int64(); err != nil || i < 1 {
		v.addf(path+".max_selected_items", "%s < 1", n)
	}
}

func (v *validator) plainTextInput(path string, e map[string]any) {
	lo, hi := int64(0), int64(MaxInputLength)
	if n, ok := e["min_length"].(json.Number); ok {
		i, err := n.Int64()
		if err != nil || i < 0 || i > MaxInputLength {
			v.addf(path+".min_length", "%s is not within 0..%d", n, MaxInputLength)
		}
		lo = i
	}
	if n, ok := e["max_length"].(json.Number); ok {
		i, err := n.Int64()
		if err != nil || i < 1 || i > MaxInputLength {
			v.addf(path+".max_length", "%s is not within 1..%d", n, MaxInputLength)
		}
		hi = i
	}
	if lo > hi {
		v.addf(path, "min_length %d > max_length %d", lo, hi)
	}
	if s, ok := e["initial_value"].(string); ok {
		if n := runes(s); int64(n) > hi {
			v.addf(path+".initial_value", "%d > %d chars", n, hi)
		}
	}
}
