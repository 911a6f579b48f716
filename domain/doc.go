// Package domain is the establishment aggregate: its state, the commands an administrator or the
// back office gives, their validation, and the events they produce. The invariants it keeps with
// the other packages, and the slug grammar, are listed under "Architecture and invariants" in the
// repository's README.
//
// It imports the standard library only. It has no NATS, HTTP, clock or randomness: the current
// date arrives as a DayStarted event or a LocalDate argument (the next one, with the instant it
// starts, as a DayAhead event), and API key material as an argument.
//
// Commands are methods of *Establishment that return the events to append and never modify the
// receiver; Apply is the only way state changes, so the aggregate is always what its log says.
// Input is validated completely before any event exists: a command reports every bad field at
// once (errors.Join of *FieldError, each naming the field's path in the import format), and a
// rejected command produces no event. A rejection names at most MaxFieldErrors fields and counts
// the others (MoreFieldErrors), up to a bound where the check stops: hostile input costs a
// bounded answer.
//
// Decisions on what the specification leaves open:
//   - Slugs (establishment, menu type, version id) are 1 to 64 characters of a-z, 0-9 and inner
//     hyphens: they are NATS subject tokens and KV key parts.
//   - The import format (EstablishmentInput) carries the whole content; importing it again
//     produces no event. Settings absent from it are left as they are; status may go from draft to active,
//     never back (the spec shows no transition out of active).
//   - A version of an undated menu type is current when it is the latest published. A dated type
//     (daily, weekly = ISO week, monthly = calendar month of the reference date) serves the version
//     whose period holds today, else the latest version dated before today; never a future one.
//   - A price is text with exactly two decimals; an a la carte item needs one, any other item must
//     have none. Prices are never floats.
//   - Enabling the API with a key already enabled is refused: regeneration is the way to a new key.
package domain
