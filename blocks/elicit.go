package blocks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// MCP elicitations (store.KindElicitation): an MCP server asks the person
// for input, either a form built from a JSON schema (mode "form") or a
// visit to a URL (mode "url"). The card shows the server's message and
// offers "Fill in…" (the form, as a modal) or a link plus "Done", and
// "Decline" and "Cancel". What the person submits becomes Decision.Content,
// typed by the schema.

// elicitationOf is the request's input, the elicitation as Claude Code
// sent it, with its server from the request when the input lacks one.
func elicitationOf(r store.Request) store.Elicitation {
	var e store.Elicitation
	_ = json.Unmarshal(r.Input, &e)
	if e.MCPServerName == "" {
		e.MCPServerName = r.MCPServer
	}
	return e
}

// elicitField is one field of a requested schema, as the modal shows it.
type elicitField struct {
	Name        string
	Title       string
	Description string
	Type        string // string, number, integer, boolean, array (of enum strings)
	Format      string // email, uri, date, date-time (strings)
	MinLength   *int
	MaxLength   *int
	Minimum     *float64
	Maximum     *float64
	MinItems    *int
	MaxItems    *int
	Enum        []string // the values (string enums; array items)
	EnumNames   []string // what the person sees for each
	Default     json.RawMessage
	Required    bool
}

// Bounds of a form the modal can show: one block for the message, and
// Slack's 100 blocks a view.
const (
	maxElicitFields = 99
	maxInputLength  = 3000 // plain_text_input max_length
)

// errUnshowable: the schema holds something the modal cannot ask for; the
// card then offers only Decline and Cancel, and says why.
var errUnshowable = errors.New("this form cannot be shown in Slack")

// schemaProperty is one property of a requested schema, as MCP allows it:
// a primitive, an enum (enum + enumNames, or oneOf const/title), or an
// array of enum strings.
type schemaProperty struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Enum        []any           `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []schemaConst   `json:"oneOf"`
	AnyOf       []schemaConst   `json:"anyOf"`
	Items       *schemaProperty `json:"items"`
	Default     json.RawMessage `json:"default"`
}

type schemaConst struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// elicitFields reads the requested schema into the fields the modal shows,
// in the order Claude Code gives (property_order), else the schema's own.
func elicitFields(e store.Elicitation) ([]elicitField, error) {
	var s struct {
		Properties map[string]schemaProperty `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(e.RequestedSchema, &s); err != nil {
		return nil, fmt.Errorf("%w: the schema is not a JSON object", errUnshowable)
	}
	order := e.PropertyOrder
	if len(order) != len(s.Properties) {
		order = propertyKeys(e.RequestedSchema)
	}
	if len(order) > maxElicitFields {
		return nil, fmt.Errorf("%w: %d fields (a modal holds %d)", errUnshowable, len(order), maxElicitFields)
	}
	fields := make([]elicitField, 0, len(order))
	for _, name := range order {
		p, ok := s.Properties[name]
		if !ok {
			return nil, fmt.Errorf("%w: property_order names %q, which the schema lacks", errUnshowable, name)
		}
		f, err := fieldOf(name, p)
		if err != nil {
			return nil, err
		}
		f.Required = slices.Contains(s.Required, name)
		fields = append(fields, f)
	}
	return fields, nil
}

// fieldOf reads one property.
func fieldOf(name string, p schemaProperty) (elicitField, error) {
	f := elicitField{Name: name, Title: p.Title, Description: p.Description, Type: p.Type, Format: p.Format,
		MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
		MinItems: p.MinItems, MaxItems: p.MaxItems, Default: p.Default}
	enumOf := func(q schemaProperty) error {
		vals, names, err := enumValues(q)
		f.Enum, f.EnumNames = vals, names
		return err
	}
	switch p.Type {
	case "string":
		if err := enumOf(p); err != nil {
			return f, fmt.Errorf("%w: field %q: %w", errUnshowable, name, err)
		}
	case "number", "integer", "boolean":
	case "array":
		if p.Items == nil {
			return f, fmt.Errorf("%w: field %q is a list without items", errUnshowable, name)
		}
		if err := enumOf(*p.Items); err != nil || len(f.Enum) == 0 {
			return f, fmt.Errorf("%w: field %q is a list of anything but fixed choices", errUnshowable, name)
		}
	default:
		return f, fmt.Errorf("%w: field %q has type %q", errUnshowable, name, p.Type)
	}
	return f, nil
}

// enumValues reads a string enum (enum with enumNames, or oneOf/anyOf with
// const and title); none for a free string.
func enumValues(p schemaProperty) (vals, names []string, err error) {
	consts := p.OneOf
	if len(consts) == 0 {
		consts = p.AnyOf
	}
	for _, c := range consts {
		p.Enum = append(p.Enum, c.Const)
		p.EnumNames = append(p.EnumNames, c.Title)
	}
	if len(p.Enum) > MaxOptions {
		return nil, nil, fmt.Errorf("%d choices (a menu holds %d)", len(p.Enum), MaxOptions)
	}
	for i, v := range p.Enum {
		s, ok := v.(string)
		if !ok {
			return nil, nil, fmt.Errorf("a choice that is not a string (%v)", v)
		}
		vals = append(vals, s)
		name := s
		if i < len(p.EnumNames) && strings.TrimSpace(p.EnumNames[i]) != "" {
			name = p.EnumNames[i]
		}
		names = append(names, name)
	}
	return vals, names, nil
}

// propertyKeys lists the schema's property names in the order they appear.
func propertyKeys(schema json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(top["properties"]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		if k, ok := t.(string); ok {
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// label is what the person sees for the field.
func (f elicitField) label() string {
	if strings.TrimSpace(f.Title) != "" {
		return f.Title
	}
	return f.Name
}

// elicitHeadline is the card's first line for an elicitation.
func elicitHeadline(e store.Elicitation) string {
	server := "*" + codeSafe(cutShown(oneLine(orDash(e.MCPServerName)), 100)) + "*"
	head := "🔌 MCP server " + server + " asks for input"
	if e.URLMode() {
		head = "🔗 MCP server " + server + " asks you to open a link"
	}
	if t := strings.TrimSpace(e.Title); t != "" {
		head += ": *" + codeSafe(cutShown(oneLine(t), 200)) + "*"
	}
	return head
}

// elicitBody shows the server's message, then the link (URL mode) with its
// real host, or what the form asks for.
func (c *card) elicitBody() {
	e := elicitationOf(c.req)
	if msg := strings.TrimSpace(e.Message); msg != "" {
		c.add(section(cutSafe(codeSafe(msg), bodyChunk)))
	}
	if e.URLMode() {
		c.add(section(linkLine(e.URL)))
		return
	}
	fields, err := elicitFields(e)
	if err != nil {
		c.add(slack.NewContextBlock("", mrkdwn("⚠️ "+codeSafe(strings.TrimPrefix(err.Error(), "blocks: "))+": Decline or Cancel it")))
		return
	}
	var names []string
	for _, f := range fields {
		n := "*" + codeSafe(cutShown(oneLine(f.label()), 80)) + "*"
		if f.Required {
			n += " (required)"
		}
		names = append(names, n)
	}
	if len(names) > 0 {
		c.add(slack.NewContextBlock("", mrkdwn(cutSafe("Asks for: "+strings.Join(names, ", "), MaxText))))
	}
}

// linkLine shows a URL so its real host is what a person reads first; a
// URL that is not plain http(s) is shown as text, never as a link.
func linkLine(raw string) string {
	u, err := url.Parse(raw)
	l, ok := link(raw, raw)
	if err != nil || !ok || len(raw) > MaxURL {
		return "Link (not a plain http or https address, so not a link here): " + inlineCode(raw, 500)
	}
	return "Opens *" + Escape(u.Hostname()) + "*: " + l
}

// linkHost is the host a URL goes to, for a plain http(s) URL whose host
// reads as what it is (no user info, ASCII): only such a URL gets a link
// button, whose label names the host.
func linkHost(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		hasInvisible(raw) || len(raw) > MaxURL || strings.IndexFunc(u.Host, func(r rune) bool { return r > 127 }) >= 0 ||
		strings.Contains(u.Host, "xn--") {
		return "", false
	}
	return u.Hostname(), true
}

// elicitControls: "Fill in…" (or the link and "Done"), "Decline", "Cancel".
func (c *card) elicitControls(v func(q, o int) string) []slack.BlockElement {
	e := elicitationOf(c.real)
	var els []slack.BlockElement
	if e.URLMode() {
		if host, ok := linkHost(e.URL); ok {
			open := button(string(ActionLink), "Open "+host, v(0, 0))
			open.URL = e.URL
			els = append(els, open)
		}
		els = append(els, button(string(ActionElicitDone), "Done", v(0, 0)).WithStyle(slack.StylePrimary))
	} else if _, err := elicitFields(e); err == nil {
		els = append(els, button(string(ActionElicitFill), "Fill in…", v(0, 0)).WithStyle(slack.StylePrimary))
	}
	return append(els,
		button(string(ActionElicitDecline), "Decline", v(0, 0)).WithStyle(slack.StyleDanger),
		button(string(ActionElicitCancel), "Cancel", v(0, 0)))
}

// decideElicitAction is DecideAction for an elicitation's card.
func decideElicitAction(a Action, r store.Request, d store.Decision) (store.Decision, Next, error) {
	e := elicitationOf(r)
	mismatch := fmt.Errorf("%w (%s on an elicitation)", ErrMismatch, a.Kind)
	switch a.Kind {
	case ActionElicitFill:
		if _, err := elicitFields(e); err != nil || e.URLMode() {
			return store.Decision{}, NextDecide, mismatch
		}
		return store.Decision{}, NextElicitModal, nil
	case ActionElicitDone:
		if !e.URLMode() {
			return store.Decision{}, NextDecide, mismatch
		}
		d.Outcome = store.OutcomeAllow
	case ActionElicitDecline:
		d.Outcome = store.OutcomeDeny
	case ActionElicitCancel:
		d.Outcome, d.Skipped = store.OutcomeDeny, true
	case ActionLink:
		return store.Decision{}, NextNothing, nil
	default:
		return store.Decision{}, NextDecide, mismatch
	}
	return d, NextDecide, nil
}

// elicitOutcomeWord is the settled elicitation's one word.
func elicitOutcomeWord(r store.Request) string {
	switch d := r.Decision; {
	case d.Outcome == store.OutcomeAllow && elicitationOf(r).URLMode():
		return "Done"
	case d.Outcome == store.OutcomeAllow:
		return "Submitted"
	case d.Outcome == store.OutcomeDeny && d.Skipped:
		return "Cancelled"
	case d.Outcome == store.OutcomeDeny:
		return "Declined"
	}
	return ""
}

// elicitDetails lists what was submitted, field by field, in the form's
// order (secrets masked, escaped).
func elicitDetails(r store.Request) string {
	if r.Kind != store.KindElicitation {
		return ""
	}
	var content map[string]json.RawMessage
	if json.Unmarshal(r.Decision.Content, &content) != nil || len(content) == 0 {
		return ""
	}
	fields, _ := elicitFields(elicitationOf(r))
	var b strings.Builder
	for _, f := range fields {
		raw, ok := content[f.Name]
		if !ok {
			continue
		}
		b.WriteString("\n• *" + codeSafe(cutShown(oneLine(f.label()), 200)) + "* → " + codeSafe(cutShown(oneLine(maskSecrets(shownValue(f, raw))), 500)))
	}
	return b.String()
}

// shownValue is a submitted value as the person chose it: an enum's name,
// yes/no, the text or number itself.
func shownValue(f elicitField, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if i := slices.Index(f.Enum, s); i >= 0 {
			return f.EnumNames[i]
		}
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		for i, v := range list {
			if j := slices.Index(f.Enum, v); j >= 0 {
				list[i] = f.EnumNames[j]
			}
		}
		return strings.Join(list, ", ")
	}
	switch string(raw) {
	case "true":
		return "yes"
	case "false":
		return "no"
	}
	return string(raw)
}

// elicitBlockID is the modal block of field i.
func elicitBlockID(i int) string { return blockElicit + strconv.Itoa(i) }

// ElicitModal is the form of an elicitation: the server's message, then
// one input per field of the schema, required ones marked by Slack.
func ElicitModal(r store.Request, card store.MessageRef) slack.ModalViewRequest {
	e := elicitationOf(r)
	bs := []slack.Block{section(cutSafe(elicitHeadline(e)+"\n"+codeSafe(cutShown(strings.TrimSpace(e.Message), 2000)), MaxText))}
	fields, _ := elicitFields(e)
	for i, f := range fields {
		var hint *slack.TextBlockObject
		if d := strings.TrimSpace(f.Description); d != "" {
			hint = plainInput(d, MaxLabel)
		}
		in := slack.NewInputBlock(elicitBlockID(i), plainInput(f.label(), MaxLabel), hint, fieldElement(f)).WithOptional(!f.Required)
		bs = append(bs, in)
	}
	return modal(ModalElicit, r, card, "Answer "+cut(orDash(e.MCPServerName), 14), "Submit", bs...)
}

// fieldElement is the input element that asks for f.
func fieldElement(f elicitField) slack.BlockElement {
	var def any
	_ = json.Unmarshal(f.Default, &def)
	options := func() []*slack.OptionBlockObject {
		var out []*slack.OptionBlockObject
		for i, name := range f.EnumNames {
			out = append(out, slack.NewOptionBlockObject(strconv.Itoa(i), plainInput(name, MaxOptionText), nil))
		}
		return out
	}
	switch {
	case f.Type == "array":
		el := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose"), actionValue, options()...)
		if f.MaxItems != nil && *f.MaxItems > 0 {
			el.MaxSelectedItems = f.MaxItems
		}
		return el
	case len(f.Enum) > 0:
		el := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose"), actionValue, options()...)
		if s, ok := def.(string); ok && slices.Contains(f.Enum, s) {
			el.InitialOption = el.Options[slices.Index(f.Enum, s)]
		}
		return el
	case f.Type == "boolean":
		yes, no := slack.NewOptionBlockObject("true", plain("Yes"), nil), slack.NewOptionBlockObject("false", plain("No"), nil)
		el := slack.NewRadioButtonsBlockElement(actionValue, yes, no)
		if b, ok := def.(bool); ok {
			el.InitialOption = map[bool]*slack.OptionBlockObject{true: yes, false: no}[b]
		}
		return el
	case f.Type == "number" || f.Type == "integer":
		el := slack.NewNumberInputBlockElement(nil, actionValue, f.Type == "number")
		el.MinValue, el.MaxValue = numberText(f.Minimum), numberText(f.Maximum)
		if n, ok := def.(float64); ok {
			el.InitialValue = strconv.FormatFloat(n, 'f', -1, 64)
		}
		return el
	}
	return stringElement(f, def)
}

// stringElement asks for a free string, by its format.
func stringElement(f elicitField, def any) slack.BlockElement {
	initial, _ := def.(string)
	switch f.Format {
	case "email":
		el := slack.NewEmailTextInputBlockElement(nil, actionValue)
		el.InitialValue = initial
		return el
	case "uri":
		el := slack.NewURLTextInputBlockElement(nil, actionValue)
		el.InitialValue = initial
		return el
	case "date":
		el := slack.NewDatePickerBlockElement(actionValue)
		if _, err := time.Parse(time.DateOnly, initial); err == nil {
			el.InitialDate = initial
		}
		return el
	}
	max := maxInputLength
	if f.MaxLength != nil && *f.MaxLength > 0 {
		max = min(*f.MaxLength, maxInputLength)
	}
	el := textInput(max > 300, cut(initial, max), max)
	if f.MinLength != nil && *f.MinLength > 0 {
		el.MinLength = min(*f.MinLength, maxInputLength)
	}
	return el
}

// numberText writes a bound for number_input ("" for none).
func numberText(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

// decideElicitView reads the submitted form into the decision's content,
// typed by the schema; a value that breaks the schema is a field error.
func decideElicitView(r store.Request, get func(string) slack.BlockAction, d store.Decision) (store.Decision, map[string]string, error) {
	e := elicitationOf(r)
	fields, err := elicitFields(e)
	if err != nil || e.URLMode() {
		return store.Decision{}, nil, fmt.Errorf("%w (a form for an elicitation that has none)", ErrMismatch)
	}
	content := map[string]any{}
	errs := map[string]string{}
	for i, f := range fields {
		v, msg := fieldValue(f, get(elicitBlockID(i)))
		switch {
		case msg != "":
			errs[elicitBlockID(i)] = msg
		case v != nil:
			content[f.Name] = v
		case f.Required:
			errs[elicitBlockID(i)] = "This field is required."
		}
	}
	if len(errs) > 0 {
		return store.Decision{}, errs, nil
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return store.Decision{}, nil, fmt.Errorf("blocks: encode the form: %w", err)
	}
	d.Outcome, d.Content = store.OutcomeAllow, raw
	return d, nil, nil
}

// fieldValue is one field's value as the schema types it (nil when left
// empty), or a message saying what is wrong with it.
func fieldValue(f elicitField, a slack.BlockAction) (any, string) {
	switch {
	case f.Type == "array":
		return listValue(f, a)
	case len(f.Enum) > 0:
		i, err := strconv.Atoi(a.SelectedOption.Value)
		if a.SelectedOption.Value == "" {
			return nil, ""
		}
		if err != nil || i < 0 || i >= len(f.Enum) {
			return nil, "Choose one of the options."
		}
		return f.Enum[i], ""
	case f.Type == "boolean":
		switch a.SelectedOption.Value {
		case "":
			return nil, ""
		case "true", "false":
			return a.SelectedOption.Value == "true", ""
		}
		return nil, "Choose Yes or No."
	case f.Type == "number" || f.Type == "integer":
		return numberValue(f, strings.TrimSpace(a.Value))
	case f.Format == "date":
		return stringValue(f, a.SelectedDate)
	}
	return stringValue(f, a.Value)
}

// listValue reads a multi-select of enum strings.
func listValue(f elicitField, a slack.BlockAction) (any, string) {
	if len(a.SelectedOptions) == 0 {
		return nil, ""
	}
	var out []string
	for _, o := range a.SelectedOptions {
		i, err := strconv.Atoi(o.Value)
		if err != nil || i < 0 || i >= len(f.Enum) {
			return nil, "Choose among the options."
		}
		out = append(out, f.Enum[i])
	}
	switch {
	case f.MinItems != nil && len(out) < *f.MinItems:
		return nil, fmt.Sprintf("Choose at least %d.", *f.MinItems)
	case f.MaxItems != nil && len(out) > *f.MaxItems:
		return nil, fmt.Sprintf("Choose at most %d.", *f.MaxItems)
	}
	return out, ""
}

// numberValue parses and bounds a number or an integer.
func numberValue(f elicitField, s string) (any, string) {
	if s == "" {
		return nil, ""
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return nil, "Enter a number."
	}
	if f.Type == "integer" && n != math.Trunc(n) {
		return nil, "Enter a whole number."
	}
	switch {
	case f.Minimum != nil && n < *f.Minimum:
		return nil, "Enter at least " + numberText(f.Minimum) + "."
	case f.Maximum != nil && n > *f.Maximum:
		return nil, "Enter at most " + numberText(f.Maximum) + "."
	}
	if f.Type == "integer" {
		if math.Abs(n) > 1<<53 {
			return nil, "That number is too large."
		}
		return int64(n), ""
	}
	return n, ""
}

// stringValue checks a string's length and format.
func stringValue(f elicitField, s string) (any, string) {
	if strings.TrimSpace(s) == "" {
		return nil, ""
	}
	n := runes(s)
	switch {
	case f.MinLength != nil && n < *f.MinLength:
		return nil, fmt.Sprintf("Enter at least %s.", plural(*f.MinLength, "character"))
	case f.MaxLength != nil && n > *f.MaxLength:
		return nil, fmt.Sprintf("Enter at most %s.", plural(*f.MaxLength, "character"))
	}
	switch f.Format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != strings.TrimSpace(s) {
			return nil, "Enter an email address (name@example.com)."
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
			return nil, "Enter a full address (https://…)."
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return nil, "Enter a date (YYYY-MM-DD)."
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, "Enter a date and time (2026-11-23T14:00:00Z)."
		}
	}
	return s, ""
}
