package settings

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// RotationGrace is how long a webhook's previous secret still signs after the page rotates it.
const RotationGrace = 24 * time.Hour

// request is the command of a form of the page: its establishment's, its id following from the
// session, the form's path and the rendering the form came from (its "once" field), so that the
// form sent again, as a reload does, is applied once; app answers the repeat as a duplicate,
// without the key or secret the first answer showed.
func request(r *http.Request, s session, key string) app.Request {
	req := app.Request{Slug: s.Slug}
	if once := r.PostForm.Get("once"); once != "" {
		req.CommandID = app.KeyedCommandID("settings "+key+" "+r.URL.Path+" "+once, nil)
	}
	return req
}

// enableAPI turns the API on; the answer shows the key it made, this once.
func (p *Page) enableAPI(w http.ResponseWriter, r *http.Request, s session, key string) {
	res, err := p.cfg.Commands.EnableAPI(r.Context(), request(r, s, key))
	if err != nil {
		p.refused(w, r, s, err)
		return
	}
	o := outcome{Notice: "done.api-enabled", Key: string(res.APIKey)}
	switch {
	case res.Duplicate:
		o.Notice = "done.repeat"
	case res.APIKey == "":
		o.Notice = "api.already"
	}
	p.render(w, r, s, o)
}

func (p *Page) disableAPI(w http.ResponseWriter, r *http.Request, s session, key string) {
	if _, err := p.cfg.Commands.DisableAPI(r.Context(), request(r, s, key)); err != nil {
		p.refused(w, r, s, err)
		return
	}
	done(w, r, "api-disabled")
}

// regenerateKey replaces the key once the form's box confirms it; the answer shows the new key.
func (p *Page) regenerateKey(w http.ResponseWriter, r *http.Request, s session, key string) {
	if r.PostForm.Get("confirm") != "yes" {
		p.render(w, r, s, outcome{Status: http.StatusUnprocessableEntity, NeedConfirm: true})
		return
	}
	res, err := p.cfg.Commands.RegenerateKey(r.Context(), request(r, s, key))
	if err != nil {
		p.refused(w, r, s, err)
		return
	}
	if res.Duplicate {
		p.render(w, r, s, outcome{Notice: "done.repeat"})
		return
	}
	p.render(w, r, s, outcome{Notice: "done.key-regenerated", Key: string(res.APIKey)})
}

func (p *Page) setRedirect(w http.ResponseWriter, r *http.Request, s session, key string) {
	var on bool
	switch r.PostForm.Get("enabled") {
	case "on":
		on = true
	case "off":
	default:
		p.refused(w, r, s, &domain.FieldError{Field: "enabled", Reason: `want "on" or "off"`})
		return
	}
	if _, err := p.cfg.Commands.SetMenuRedirect(r.Context(), request(r, s, key), on); err != nil {
		p.refused(w, r, s, err)
		return
	}
	done(w, r, "redirect-"+r.PostForm.Get("enabled"))
}

// addWebhook registers a receiver; the answer shows its signing secret, this once.
func (p *Page) addWebhook(w http.ResponseWriter, r *http.Request, s session, key string) {
	if p.cfg.Deliveries == nil {
		p.message(w, r, http.StatusNotFound, "notfound")
		return
	}
	res, err := p.cfg.Commands.RegisterWebhook(r.Context(), request(r, s, key), strings.TrimSpace(r.PostForm.Get("url")))
	if err != nil {
		p.refused(w, r, s, err)
		return
	}
	if res.Duplicate {
		p.render(w, r, s, outcome{Notice: "done.repeat"})
		return
	}
	p.render(w, r, s, outcome{
		Status: http.StatusCreated, Notice: "done.webhook-added",
		Secret: &shownSecret{Endpoint: res.Endpoint.ID, Secret: res.Endpoint.Secret},
	})
}

// webhookAction acts on one of the establishment's webhooks: rotate its secret, send it a test,
// enable it again or remove it.
func (p *Page) webhookAction(w http.ResponseWriter, r *http.Request, s session, _ string) {
	d := p.cfg.Deliveries
	if d == nil {
		p.message(w, r, http.StatusNotFound, "notfound")
		return
	}
	ctx, id := r.Context(), r.PathValue("id")
	var err error
	switch r.PathValue("action") {
	case "rotate":
		var secret string
		if secret, err = p.cfg.Commands.RotateWebhookSecret(ctx, s.Slug, id, RotationGrace); err == nil {
			p.render(w, r, s, outcome{Notice: "done.secret-rotated", Secret: &shownSecret{Endpoint: id, Secret: secret, Grace: span(RotationGrace)}})
			return
		}
	case "test":
		var at app.Attempt
		if at, err = d.Ping(ctx, s.Slug, id); err == nil {
			p.render(w, r, s, outcome{Ping: pingText(newView(r, "").table, id, at)})
			return
		}
	case "enable":
		if _, err = d.Enable(ctx, s.Slug, id); err == nil {
			done(w, r, "webhook-enabled")
			return
		}
	case "remove":
		if _, err = p.cfg.Commands.RemoveWebhook(ctx, app.Request{Slug: s.Slug}, id); err == nil {
			done(w, r, "webhook-removed")
			return
		}
	default:
		p.message(w, r, http.StatusNotFound, "notfound")
		return
	}
	p.refused(w, r, s, err)
}

// pingText says how a test delivery went, in the language of table.
func pingText(table map[string]string, id string, at app.Attempt) string {
	if at.Error == "" {
		return fmt.Sprintf(table["ping.ok"], id, at.StatusCode)
	}
	return fmt.Sprintf(table["ping.failed"], id, at.Error)
}

// refusals are the statuses of the refusals a form's answer shows on the page; any other error
// is a fault.
var refusals = map[app.Kind]int{
	app.KindInvalid:             http.StatusUnprocessableEntity,
	app.KindNotFound:            http.StatusNotFound,
	app.KindConflict:            http.StatusConflict,
	app.KindDeclined:            http.StatusUnprocessableEntity,
	app.KindTooLarge:            http.StatusRequestEntityTooLarge,
	app.KindInsufficientStorage: http.StatusInsufficientStorage,
}

// refused answers the page with the refusal err of a form, naming the fields at fault.
func (p *Page) refused(w http.ResponseWriter, r *http.Request, s session, err error) {
	status, ok := refusals[app.KindOf(err)]
	if !ok {
		p.fault(w, r, "command", err)
		return
	}
	table := newView(r, "").table
	var texts []string
	for _, fe := range domain.FieldErrors(err) {
		texts = append(texts, fmt.Sprintf(table["refused.invalid"], fe.Field, fe.Reason))
	}
	if len(texts) == 0 {
		texts = append(texts, fmt.Sprintf(table["refused"], err.Error()))
	}
	p.render(w, r, s, outcome{Status: status, Error: strings.Join(texts, " ")})
}
