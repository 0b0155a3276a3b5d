"""Scrapy contender of Sextant's benchmark (bench/cmd/benchall, docs/bench/peers.md).

A CrawlSpider whose LinkExtractor follows the elements and attributes
Sextant's extractor follows. Settings (parallelism, FIFO queues, robots.txt,
per-host concurrency) are given on the command line by the harness with -s,
so that docs/bench/peers.md can quote the exact command.

Every HTTP response the downloader receives (redirects and robots.txt
included, before any middleware drops it) is written to FETCH_LOG as one
"STATUS URL" line: the per-fetch log the harness compares with the oracle.
"""

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
             callback="parse_srcset", follow=True),
    )

    def __init__(self, seeds="", domain="sim.test", fetch_log="", *a, **kw):
        self.allowed_domains = [domain]
        with open(seeds) as f:
            self.start_urls = [l.strip() for l in f if l.strip()]
        self._log = open(fetch_log, "w", buffering=1 << 16)
        super().__init__(*a, **kw)

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
    # list ("u 1x, v 2x"), so its candidates are followed here.
    def parse_srcset(self, response):
        if not isinstance(response, TextResponse):
            return  # an image or media: nothing to parse
        for v in response.css("img::attr(srcset), source::attr(srcset)").getall():
            for cand in v.split(","):
                f = cand.split()
                if f:
                    yield Request(response.urljoin(f[0]))
