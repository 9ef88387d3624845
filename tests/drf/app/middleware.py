"""Every answer may be read by browser clients of other origins (docs/spec/http.md)."""


def allow_any_origin(get_response):
    def middleware(request):
        response = get_response(request)
        response["Access-Control-Allow-Origin"] = "*"
        return response
    return middleware
