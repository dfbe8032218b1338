package policy

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxURLBytes bounds the URL of a WebFetch; a longer one is unknown.
const maxURLBytes = 8192

// domainPattern is WebFetch(domain:…): one host, or with a leading "*."
// every host below it (not the domain itself). Ports do not matter.
type domainPattern struct {
	host string
	sub  bool
}

func parseDomain(s string) (domainPattern, error) {
	var d domainPattern
	rest, ok := strings.CutPrefix(s, "domain:")
	if !ok {
		return d, errors.New(`WebFetch takes only domain:HOST (or domain:*.HOST); write WebFetch alone for every URL`)
	}
	if d.host, d.sub = strings.CutPrefix(rest, "*."); d.sub && d.host == "" {
		return d, errors.New("domain:*. names no domain")
	}
	h, ok := canonicalHost(strings.ToLower(d.host))
	if !ok || h != strings.ToLower(d.host) {
		return d, errors.New("domain:" + rest + " is not a host name (letters, digits, - and dots, or an IP address, without scheme, port or path)")
	}
	if d.sub && net.ParseIP(h) != nil {
		return d, errors.New("domain:*. takes a domain, not an IP address")
	}
	d.host = h
	return d, nil
}

func (d domainPattern) match(host string) bool {
	if d.sub {
		return strings.HasSuffix(host, "."+d.host)
	}
	return host == d.host
}

func (d domainPattern) String() string {
	if d.sub {
		return "domain:*." + d.host
	}
	return "domain:" + d.host
}

// fetchHost is the host a WebFetch URL reaches, the way a browser's URL
// parser sees it: userinfo dropped (https://example.com@evil.test/ is
// evil.test), lower case, a trailing dot dropped, IPv4 in any of its
// numeric spellings as a dotted quad. False when the URL is not plain
// http(s) or the host is not one rule syntax can name (backslashes,
// spaces, non-ASCII, percent-encoding the parsers may read differently).
func fetchHost(raw string) (string, bool) {
	if len(raw) > maxURLBytes || strings.ContainsAny(raw, "\\ ") {
		return "", false
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f {
			return "", false
		}
	}
	_, rest, ok := strings.Cut(raw, "://")
	if authority, _, _ := strings.Cut(rest, "/"); !ok || strings.ContainsAny(authority, "%") || !ascii(authority) {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Host == "" {
		return "", false
	}
	return canonicalHost(strings.ToLower(u.Hostname()))
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > 0x7e {
			return false
		}
	}
	return true
}

// canonicalHost checks a lower-case host name or IP address and writes
// it the one way rules compare.
func canonicalHost(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	if ip := net.ParseIP(h); ip != nil && strings.Contains(h, ":") {
		return ip.String(), true
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c != '-' && c != '_' && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				return "", false
			}
		}
	}
	last := labels[len(labels)-1]
	if last[0] >= '0' && last[0] <= '9' {
		return ipv4(labels)
	}
	return h, true
}

// ipv4 reads a host whose last label is numeric as the WHATWG URL
// standard does: one to four parts, each decimal, 0x hex or 0 octal, the
// last filling the remaining bytes (http://2130706433/ is 127.0.0.1).
func ipv4(labels []string) (string, bool) {
	if len(labels) > 4 {
		return "", false
	}
	nums := make([]uint64, len(labels))
	for i, l := range labels {
		base := 10
		switch {
		case strings.HasPrefix(l, "0x"):
			l, base = l[2:], 16
			if l == "" {
				l = "0"
			}
		case len(l) > 1 && l[0] == '0':
			l, base = l[1:], 8
		}
		n, err := strconv.ParseUint(l, base, 64)
		if err != nil {
			return "", false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
		v |= n << (8 * (3 - i))
	}
	lastN := nums[len(nums)-1]
	if lastN >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	v |= lastN
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).String(), true
}
