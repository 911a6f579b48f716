// Package kafka publishes change events to a Kafka topic: a destination's Sink (see package
// destination), as the CloudEvents Kafka binding lays them out. The message key is the
// establishment's slug, so that one establishment's events stay in order in one partition; in the
// binary content mode the attributes are "ce_" headers and datacontenttype the "content-type"
// header, the value the data; in the structured mode the value is the whole event and
// "content-type" is application/cloudevents+json.
//
// The producer is Sarama's, as in watermill-kafka: every in-sync replica acknowledges, and one
// request is in flight per broker, so that a retry cannot put an event after a later one. Its
// publisher is a small one of its own behind watermill's message.Publisher interface, with
// watermill-kafka's Marshaler, rather than watermill-kafka's Publisher, which waits for each
// message's acknowledgement before sending the next (a round trip per event: about 7,000 events
// a second to an in-process broker, against about 55,000 when a page goes as one batch) and
// whose Close, racing a Publish still sending, makes Sarama send on a closed channel.
//
// It imports the standard library, watermill, watermill-kafka, Sarama, xdg-go's SCRAM and
// webhook/destination.
package kafka
