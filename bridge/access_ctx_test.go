package bridge

import (
	"context"

	"github.com/toolbridge/toolbridge/bridge/access"
)

func accessContext(sub string) context.Context {
	return access.NewContext(context.Background(), &access.Identity{Subject: sub})
}
