package frontier

func childMain() bool { return false }
