//! What every answer carries, and what happens if a handler panics.
//!
//! - A panic anywhere below this layer is caught and answered 500 with one
//!   line (a panic is a bug; the server goes on serving).
//! - Every answer, page, API or error, carries a Content-Security-Policy
//!   that allows only this server's stylesheet (no script at all, no
//!   framing: `frame-ancestors 'none'`, and `X-Frame-Options: DENY` for
//!   older browsers), `X-Content-Type-Options: nosniff` and
//!   `Referrer-Policy: no-referrer`.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;

use crate::error::ApiError;

/// The pages hold no script and no inline style; forms post to this server.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The middleware: catch a panic, then set the headers.
pub async fn harden(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let mut response = match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(_) => {
            eprintln!("a handler panicked on {path}: answered 500");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server: this request hit a bug and was not completed (nothing was stored); please report it",
            )
            .into_response()
        }
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    async fn boom() -> &'static str {
        panic!("a bug")
    }

    #[tokio::test]
    async fn a_panic_is_a_500_with_the_headers() {
        let router = Router::new()
            .route("/boom", get(boom))
            .route("/fine", get(|| async { "fine" }))
            .layer(axum::middleware::from_fn(harden));
        let request = || Request::builder().uri("/boom").body(Body::empty()).unwrap();
        let response = router.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(response.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let body = axum::body::to_bytes(response.into_body(), 1024).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains("server: this request hit a bug"));
        // The router goes on serving.
        let fine = router.oneshot(Request::builder().uri("/fine").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(fine.status(), StatusCode::OK);
        assert!(fine.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("frame-ancestors 'none'"));
    }
}
