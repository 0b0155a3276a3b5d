package netguard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.0.7", "::1", "10.1.2.3", "172.16.0.1", "172.31.255.255",
		"192.168.1.1", "169.254.169.254", "fe80::1", "fc00::1", "fd12:3456::1",
		"0.0.0.0", "::", "224.0.0.1", "ff02::1", "100.64.0.1", "100.127.255.254",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "255.255.255.255",
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1",
		"2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808",
	}
	for _, s := range refused {
		err := Check(netip.MustParseAddr(s))
		if !errors.Is(err, ErrPrivateAddress) {
			t.Errorf("Check(%s) = %v, want ErrPrivateAddress", s, err)
			continue
		}
		if !strings.Contains(err.Error(), s) && !strings.Contains(err.Error(), netip.MustParseAddr(s).String()) {
			t.Errorf("error %q does not name the address %s", err, s)
		}
	}
	for _, s := range allowed {
		if err := Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", s, err)
		}
	}
}

func TestCheckHostPort(t *testing.T) {
	for hp, bad := range map[string]bool{
		"127.0.0.1:80":            true,
		"[::1]:443":               true,
		"[fe80::1%eth0]:80":       true,
		"93.184.216.34:80":        false,
		"[2606:2800:220:1::]:443": false,
		"example.com:80":          true, // names cannot be judged
		"169.254.169.254":         true,
	} {
		err := CheckHostPort(hp)
		if (err != nil) != bad {
			t.Errorf("CheckHostPort(%q) = %v, want refused=%v", hp, err, bad)
		}
	}
}
