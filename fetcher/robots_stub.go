package fetcher

type robotsCache struct{}

func newRobotsCache(int) *robotsCache { return &robotsCache{} }
