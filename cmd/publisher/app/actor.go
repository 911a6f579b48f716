package app

import "context"

// Actor is who gave a command: the credential it came with, by its id and its name, never its
// secret. A transport puts it in the command's context (WithActor); the commands record it with
// what they change, and Audit lists it.
type Actor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type actorKey struct{}

// WithActor returns ctx carrying actor: the commands given ctx record it as who gave them.
func WithActor(ctx context.Context, actor Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf returns the actor ctx carries, and whether it carries one.
func ActorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}
