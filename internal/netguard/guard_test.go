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

// A zone must not hide an address from the guard: netip.Prefix.Contains is
// false for any zoned address.
func TestCheckZoned(t *testing.T) {
	for _, s := range []string{"::1%lo", "fe80::1%eth0", "::ffff:127.0.0.1%lo", "ff02::1%1", "fd00::1%x", "::127.0.0.1", "::a9fe:a9fe"} {
		var re *RefusedError
		if err := Check(netip.MustParseAddr(s)); !errors.Is(err, ErrPrivateAddress) || !errors.As(err, &re) || re.Addr != netip.MustParseAddr(s) {
			t.Errorf("Check(%s) = %v, want a RefusedError naming it", s, err)
		}
	}
}

func TestParseHost(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"0x7f.1": "127.0.0.1", "0X7F.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "127.0.1": "127.0.0.1",
		"0x7f000001": "127.0.0.1", "017700000001": "127.0.0.1", "127.0.0.1.": "127.0.0.1",
		"0": "0.0.0.0", "0x": "0.0.0.0", "1.2.3.4": "1.2.3.4", "0xa9fea9fe": "169.254.169.254",
		"[::1]": "::1", "::1": "::1", "[::ffff:7f00:1]": "::ffff:127.0.0.1", "[fe80::1%eth0]": "fe80::1%eth0",
		"4294967295": "255.255.255.255", "1.16777215": "1.255.255.255",
	} {
		a, ok, err := ParseHost(host)
		if !ok || err != nil || a != netip.MustParseAddr(want) {
			t.Errorf("ParseHost(%q) = %v, %v, %v; want %s", host, a, ok, err, want)
		}
	}
	for _, host := range []string{"example.com", "1.2.3.4.example", "a1", "1.2.3.4.5.com", "localhost", "xn--0-8ub", "1.2.3.z", ""} {
		if a, ok, err := ParseHost(host); ok || err != nil {
			t.Errorf("ParseHost(%q) = %v, %v, %v; want a name", host, a, ok, err)
		}
	}
	// Numeric but not an address (WHATWG: failure): refused, not looked up.
	for _, host := range []string{"4294967296", "256.0.0.1", "0x7g.1", "1.2.3.4.5", "1.256.0.0", "08.0.0.1", "1.2.3.0x1ff", "99999999999999999999", "1..2"} {
		if _, _, err := ParseHost(host); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("ParseHost(%q): err %v, want ErrInvalidHost", host, err)
		}
	}
}

func TestIsLocalhost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost.": true, "a.b.localhost": true, "localhost.localdomain": false,
		"notlocalhost": false, "localhost.example": false, "": false,
	} {
		if IsLocalhost(host) != want {
			t.Errorf("IsLocalhost(%q) != %v", host, want)
		}
	}
}
