package fetcher

import (
	"context"
	"net/http"
)

type reqHeaderKey struct{}

// WithRequestHeader returns a context that makes Fetch and FetchCapped send
// h's fields with the request: a crawler's conditional requests
// (If-None-Match, If-Modified-Since) for a URL it fetched before. Fields
// the fetcher sets itself (User-Agent, Accept, Accept-Encoding) are kept;
// h is not modified and must not be modified while a fetch uses it.
func WithRequestHeader(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, reqHeaderKey{}, h)
}

// addRequestHeader adds the fields of ctx's WithRequestHeader to dst.
func addRequestHeader(ctx context.Context, dst http.Header) {
	h, _ := ctx.Value(reqHeaderKey{}).(http.Header)
	for k, vs := range h {
		k = http.CanonicalHeaderKey(k)
		if _, set := dst[k]; set || k == "Host" || len(vs) == 0 {
			continue
		}
		dst[k] = vs
	}
}
