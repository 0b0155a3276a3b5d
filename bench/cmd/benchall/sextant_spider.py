"""Scrapy contender of Sextant's benchmark (bench/cmd/benchall, docs/bench/peers.md).

A CrawlSpider whose LinkExtractor follows the elements and attributes
Sextant's extractor follows. Settings (parallelism, FIFO queues, robots.txt,
per-host concurrency) are given on the command line by the harness with -s,
so that docs/bench/peers.md can quote the exact command.

Every HTTP response the downloader receives (redirects and robots.txt
included, before any middleware drops it) is written to FETCH_LOG as one
"STATUS URL" line: the per-fetch log the harness compares with the oracle.

Every URL is requested in its WHATWG form (whatwg below: what Sextant's
internal/urlnorm and the oracle make of it), seeds included, and every
request goes through Scrapy's duplicate filter: w3lib's canonicalisation,
which the filter uses, keeps "http://h:80/x" apart from "http://h/x" and
"/d/%2e/p" apart from "/d/p", so each spelling was fetched. A
<meta http-equiv=refresh> URL is a link, as in Sextant's extractor (the
harness turns Scrapy's meta-refresh middleware off: it took such a page for
a redirect and never read its links).
"""

import re
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.http import TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

# Sextant's extractor: a/area/link href, img/source src and srcset,
# script/iframe/frame/embed/audio/video/track src, form action, object data.
TAGS = ("a", "area", "link", "img", "source", "script", "iframe", "frame",
        "embed", "audio", "video", "track", "form", "object")
ATTRS = ("href", "src", "action", "data")


class SextantBenchSpider(CrawlSpider):
    name = "sextant-bench"

    # deny_extensions=(): follow images and media too (Scrapy skips them by
    # default); the oracle fetches them, as every other contender does.
    rules = (
        Rule(LinkExtractor(tags=TAGS, attrs=ATTRS, deny_extensions=(),
                           canonicalize=False, unique=True),
             callback="parse_srcset", follow=True,
             process_request="normalized"),
    )

    def __init__(self, seeds="", domain="sim.test", fetch_log="", *a, **kw):
        self.allowed_domains = [domain]
        with open(seeds) as f:
            self.start_urls = [l.strip() for l in f if l.strip()]
        self._log = open(fetch_log, "w", buffering=1 << 16)
        super().__init__(*a, **kw)

    # Seeds through the duplicate filter (Scrapy's default sends them with
    # dont_filter=True, so a seed linked from a page was fetched again).
    def start_requests(self):
        for u in self.start_urls:
            yield Request(whatwg(u))

    def normalized(self, request, response):
        u = whatwg(request.url)
        return request if u == request.url else request.replace(url=u)

    @classmethod
    def from_crawler(cls, crawler, *a, **kw):
        s = super().from_crawler(crawler, *a, **kw)
        crawler.signals.connect(s._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(s._closed, signal=signals.spider_closed)
        return s

    def _downloaded(self, response, request, spider):
        self._log.write("%d %s\n" % (response.status, response.url))

    def _closed(self, spider):
        self._log.close()

    # CrawlSpider calls a rule's callback only for pages its rules
    # extracted; the seeds go to parse_start_url.
    def parse_start_url(self, response):
        return self.parse_srcset(response)

    # A LinkExtractor takes an attribute's value as one URL; srcset holds a
    # list ("u 1x, v 2x"), so its candidates are followed here, and so is a
    # meta refresh's URL (inside its content attribute: "30; url=/x").
    def parse_srcset(self, response):
        if not isinstance(response, TextResponse):
            return  # an image or media: nothing to parse
        for v in response.css("img::attr(srcset), source::attr(srcset)").getall():
            for cand in v.split(","):
                f = cand.split()
                if f:
                    yield Request(whatwg(response.urljoin(f[0])))
        for m in response.css("meta"):
            if (m.attrib.get("http-equiv") or "").strip().lower() == "refresh":
                u = refresh_url(m.attrib.get("content") or "")
                if u:
                    yield Request(whatwg(response.urljoin(u)))


_REFRESH = re.compile(r"^\s*[0-9.]+\s*[;,]?\s*(?:url\s*=\s*)?(.*)$", re.I | re.S)


def refresh_url(content):
    """The URL of a meta refresh's content ("30; url=/x"), or None."""
    m = _REFRESH.match(content)
    if not m:
        return None
    u = m.group(1).strip()
    if u[:1] in ("'", '"'):
        q, u = u[0], u[1:]
        if q in u:
            u = u[:u.index(q)]
    return u or None


# WHATWG percent-encode sets (printable part) of a special URL's path and
# query; non-ASCII characters and controls are always encoded, as UTF-8.
_PATH_ESC = frozenset(' "#<>?`{}^')
_QUERY_ESC = frozenset(' "#<>\'')


def _escape(s, esc):
    out = []
    for c in s:
        if c in esc or ord(c) < 0x21 or ord(c) >= 0x7f:
            out.append("".join("%%%02X" % b for b in c.encode("utf-8")))
        else:
            out.append(c)
    return "".join(out)


def _single_dot(seg):
    return seg.lower() in (".", "%2e")


def _double_dot(seg):
    return seg.lower() in ("..", ".%2e", "%2e.", "%2e%2e")


def whatwg(url):
    """url (absolute, http or https) as the WHATWG URL parser serialises it,
    without the fragment: scheme and host lower-case, the scheme's default
    port dropped, "." and ".." segments (and their %2e spellings) removed,
    the path and query percent-encoded as the standard does; existing
    escapes are kept as they are (the standard neither decodes nor
    re-cases them). The port of Sextant's internal/urlnorm fast path, for
    the URLs simweb writes; anything else is returned unchanged."""
    main = url.split("#", 1)[0]
    try:
        p = urlsplit(main)
    except ValueError:
        return url
    scheme = p.scheme.lower()
    if scheme not in ("http", "https") or not p.netloc or "@" in p.netloc:
        return url
    host, _, port = p.netloc.partition(":")
    host = host.lower()
    if port:
        if not port.isdigit() or int(port) > 65535:
            return url
        if int(port) != {"http": 80, "https": 443}[scheme]:
            host += ":%d" % int(port)
    segs = p.path.split("/")[1:] if p.path else [""]
    out = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if _double_dot(seg):
            if out:
                out.pop()
            if last:
                out.append("")
        elif _single_dot(seg):
            if last:
                out.append("")
        else:
            out.append(_escape(seg, _PATH_ESC))
    u = "%s://%s/%s" % (scheme, host, "/".join(out))
    if "?" in main:
        u += "?" + _escape(p.query, _QUERY_ESC)
    return u
