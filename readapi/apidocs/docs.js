// Renders the OpenAPI description the page names (data-url) with Swagger UI, making no request
// outside the page's origin: no validator badge (validatorUrl: null) and no top bar, whose field
// would load any description from anywhere.
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.url,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
