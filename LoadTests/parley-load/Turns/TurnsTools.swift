import JSON

/// The function tools `turns --tools K` declares in every session: the first K of a fixed
/// catalogue of 128 an assistant agent might carry (get_weather, book_table, search_flights, …),
/// each with a one-sentence description and a JSON Schema of 2 to 4 typed properties. The same K
/// for every session and every run, so that the server can share one copy of the list and two
/// runs can be compared.
///
/// The turns ask "hello number N", and `parley mock-llm` calls a tool when the prompt names one (by
/// its whole name, or by the words of its name but a leading verb such as "get"): no word of any
/// tool's name is "hello" or "number" (nor their plurals) or a number, so the replies stay text.
enum TurnsTools {
    /// As many as a Realtime session.update may declare.
    static let maxCount = 128

    /// The text of turn `n` of a session (the first is 1).
    static func turnText(_ n: Int) -> String { "hello number \(n)" }

    /// The first `count` definitions, in the Realtime API's flat shape:
    /// `{"type":"function","name":…,"description":…,"parameters":{…}}`. The domains are taken in
    /// turn (every domain's first tool, then every domain's second, …), so that a short list is
    /// as varied as a long one.
    static func definitions(_ count: Int) -> [JSON] {
        precondition((0...maxCount).contains(count), "--tools must be 0...\(maxCount)")
        return (0..<count).map { i in
            let domain = domains[i % domains.count]
            return definition(domain.tools[i / domains.count], in: domain)
        }
    }

    /// `{"type":"session.update","session":{"tools":[…],"tool_choice":"auto"}}`: one line of JSON,
    /// the same text for every session.
    static func sessionUpdate(_ count: Int) -> String {
        JSON.object([("type", .string("session.update")),
                     ("session", .object([("tools", .array(definitions(count))), ("tool_choice", .string("auto"))]))]).description
    }

    /// The words of a tool's name, lowercased, as the mock splits it ('_' and '-').
    static func words(of name: String) -> [String] {
        name.lowercased().split { $0 == "_" || $0 == "-" }.map(String.init)
    }

    // MARK: The catalogue

    private struct Property {
        let name: String
        let schema: JSON
    }

    private struct Domain {
        /// The properties every tool of the domain takes, all required.
        let properties: [Property]
        /// Name and description of each tool.
        let tools: [(name: String, description: String)]
    }

    private static func definition(_ tool: (name: String, description: String), in domain: Domain) -> JSON {
        var properties = domain.properties
        // An optional extra, as such tools often have one.
        if tool.name.hasPrefix("cancel_") {
            properties.append(Property(name: "reason", schema: string("Why it is cancelled, in a few words.")))
        } else if tool.name.hasPrefix("list_") {
            properties.append(Property(name: "limit", schema: integer("How many to return at most.", minimum: 1, maximum: 50)))
        }
        let parameters = JSON.object([
            ("type", .string("object")),
            ("properties", .object(properties.map { ($0.name, $0.schema) })),
            ("required", .array(domain.properties.map { .string($0.name) })),
            ("additionalProperties", .bool(false)),
        ])
        return .object([("type", .string("function")), ("name", .string(tool.name)),
                        ("description", .string(tool.description)), ("parameters", parameters)])
    }

    private static func string(_ description: String, enum values: [String] = [], format: String? = nil) -> JSON {
        var members: [(String, JSON)] = [("type", .string("string")), ("description", .string(description))]
        if !values.isEmpty { members.append(("enum", .array(values.map(JSON.string)))) }
        if let format { members.append(("format", .string(format))) }
        return .object(members)
    }

    private static func integer(_ description: String, minimum: Int, maximum: Int) -> JSON {
        .object([("type", .string("integer")), ("description", .string(description)),
                 ("minimum", .int(minimum)), ("maximum", .int(maximum))])
    }

    private static func decimal(_ description: String, minimum: Double) -> JSON {
        .object([("type", .string("number")), ("description", .string(description)), ("minimum", .number(minimum))])
    }

    private static func boolean(_ description: String) -> JSON {
        .object([("type", .string("boolean")), ("description", .string(description))])
    }

    private static func p(_ name: String, _ schema: JSON) -> Property { Property(name: name, schema: schema) }

    private static let city = p("city", string("City name, such as Paris or New York."))
    private static let date = p("date", string("Calendar date, YYYY-MM-DD.", format: "date"))
    private static let origin = p("origin", string("IATA code or city of departure."))
    private static let destination = p("destination", string("IATA code or city of arrival."))

    /// 32 domains of 4 tools: 128.
    private static let domains: [Domain] = [
        Domain(properties: [city, p("units", string("Temperature units.", enum: ["celsius", "fahrenheit"]))], tools: [
            ("get_weather", "Gets the current weather for a city."),
            ("get_weather_forecast", "Gets the weather forecast for the next five days in a city."),
            ("get_air_quality", "Gets the air quality index and the main pollutant for a city."),
            ("get_sunrise_times", "Gets today's sunrise and sunset times for a city."),
        ]),
        Domain(properties: [p("restaurant", string("Name of the restaurant.")), date,
                            p("party_size", integer("How many people the table is for.", minimum: 1, maximum: 20))], tools: [
            ("book_table", "Books a table at a restaurant for a party on a date."),
            ("cancel_table_booking", "Cancels a table booking made earlier at a restaurant."),
            ("list_available_tables", "Lists the times a restaurant still has a table free on a date."),
            ("get_restaurant_menu", "Gets the menu a restaurant serves on a date."),
        ]),
        Domain(properties: [origin, destination, date], tools: [
            ("search_flights", "Searches for flights between two airports on a date."),
            ("book_flight", "Books a seat on the cheapest flight between two airports on a date."),
            ("cancel_flight", "Cancels the traveller's flight between two airports on a date."),
            ("get_flight_status", "Gets the departure and arrival status of a flight."),
        ]),
        Domain(properties: [city, p("check_in", string("Arrival date, YYYY-MM-DD.", format: "date")),
                            p("nights", integer("Length of the stay in nights.", minimum: 1, maximum: 30))], tools: [
            ("search_hotels", "Searches for hotels with rooms free in a city for a stay."),
            ("book_hotel_room", "Books a hotel room in a city for a stay."),
            ("cancel_hotel_booking", "Cancels a hotel booking for a stay."),
            ("get_hotel_amenities", "Gets the amenities of the hotels in a city, such as parking or a pool."),
        ]),
        Domain(properties: [p("pickup", string("Street address to be picked up at.")), p("dropoff", string("Street address to go to.")),
                            p("seats", integer("Seats needed.", minimum: 1, maximum: 6))], tools: [
            ("request_ride", "Requests a car to drive the rider between two addresses."),
            ("cancel_ride", "Cancels a ride requested earlier, before the driver arrives."),
            ("estimate_ride_fare", "Estimates the fare of a ride between two addresses."),
            ("track_ride", "Tracks where the driver of a requested ride is now."),
        ]),
        Domain(properties: [p("order_id", string("The order's identifier, such as A-12345.")),
                            p("email", string("Email address the order was placed with.", format: "email"))], tools: [
            ("get_order_status", "Gets the status of an order placed in the online shop."),
            ("cancel_order", "Cancels an order that has not shipped yet."),
            ("return_order_item", "Starts a return for an item of a delivered order."),
            ("list_recent_orders", "Lists the customer's most recent orders."),
        ]),
        Domain(properties: [p("tracking_code", string("Tracking code printed on the shipping label.")),
                            p("carrier", string("Company carrying the parcel.", enum: ["ups", "fedex", "dhl", "usps"]))], tools: [
            ("track_package", "Tracks a parcel and says where it is and when it should arrive."),
            ("reroute_package", "Sends a parcel still on its way to another address."),
            ("schedule_package_pickup", "Schedules a courier to collect a parcel from the customer."),
            ("get_delivery_estimate", "Gets the expected delivery window of a parcel."),
        ]),
        Domain(properties: [p("amount", decimal("Amount of money.", minimum: 0.01)),
                            p("currency", string("ISO 4217 currency code, such as EUR.")),
                            p("recipient", string("Name or email of the person paid."))], tools: [
            ("send_payment", "Sends money from the user's wallet to a person."),
            ("request_refund", "Requests a refund of a payment made to a person."),
            ("split_bill", "Splits a bill with a person and asks them for their share."),
            ("schedule_transfer", "Schedules a transfer of money to a person."),
        ]),
        Domain(properties: [p("account_id", string("The bank account's identifier.")),
                            p("include_pending", boolean("Whether to count transactions not yet settled."))], tools: [
            ("get_account_balance", "Gets the balance of one of the user's bank accounts."),
            ("list_transactions", "Lists the latest transactions on a bank account."),
            ("freeze_card", "Freezes the debit card of a bank account at once."),
            ("get_credit_limit", "Gets the credit limit and what is left of it on an account."),
        ]),
        Domain(properties: [p("title", string("What the event is called.")),
                            p("start_time", string("When it starts, as an ISO 8601 date and time.", format: "date-time")),
                            p("duration_minutes", integer("How long it lasts in minutes.", minimum: 5, maximum: 480))], tools: [
            ("create_calendar_event", "Creates an event in the user's calendar."),
            ("cancel_calendar_event", "Cancels an event in the user's calendar and tells its guests."),
            ("list_calendar_events", "Lists the events in the user's calendar around a time."),
            ("find_free_slot", "Finds the next free slot in the user's calendar long enough for a meeting."),
        ]),
        Domain(properties: [p("text", string("What to be reminded of.")),
                            p("remind_at", string("When, as an ISO 8601 date and time.", format: "date-time"))], tools: [
            ("set_reminder", "Sets a reminder that notifies the user at a time."),
            ("cancel_reminder", "Cancels a reminder set earlier."),
            ("list_reminders", "Lists the user's reminders still to come."),
            ("snooze_reminder", "Moves a reminder that is due to a later time."),
        ]),
        Domain(properties: [p("to", string("Recipient's email address.", format: "email")), p("subject", string("Subject line.")),
                            p("body", string("Text of the message."))], tools: [
            ("send_email", "Sends an email from the user's address."),
            ("draft_email_reply", "Drafts a reply to an email for the user to review before sending."),
            ("search_inbox", "Searches the user's inbox for messages by sender and subject."),
            ("archive_email", "Archives an email so that it leaves the inbox."),
        ]),
        Domain(properties: [p("contact_name", string("The person's full name.")), p("company", string("Where the person works."))], tools: [
            ("find_contact", "Finds a person in the user's address book."),
            ("add_contact", "Adds a person to the user's address book."),
            ("update_contact", "Changes the details of a person in the user's address book."),
            ("delete_contact", "Removes a person from the user's address book."),
        ]),
        Domain(properties: [p("symbol", string("Ticker symbol, such as AAPL.")),
                            p("exchange", string("Stock exchange.", enum: ["nasdaq", "nyse", "lse", "xetra"]))], tools: [
            ("get_stock_quote", "Gets the latest price of a share and its change today."),
            ("get_stock_history", "Gets a share's closing prices over the last month."),
            ("place_stock_order", "Places an order to buy shares at the market price."),
            ("list_watchlist", "Lists the shares on the user's watchlist with their prices."),
        ]),
        Domain(properties: [p("from_currency", string("ISO 4217 code to convert from.")), p("to_currency", string("ISO 4217 code to convert to.")),
                            p("amount", decimal("Amount to convert.", minimum: 0))], tools: [
            ("convert_currency", "Converts an amount of money from one currency to another."),
            ("get_exchange_rate", "Gets today's exchange rate between two currencies."),
            ("get_rate_history", "Gets the exchange rate between two currencies over the last year."),
            ("set_rate_alert", "Alerts the user when an exchange rate passes a level."),
        ]),
        Domain(properties: [city, date, p("genre", string("Kind of film.", enum: ["action", "comedy", "drama", "family", "horror"]))], tools: [
            ("find_movie_showtimes", "Finds the films showing in a city's cinemas on a date."),
            ("buy_movie_tickets", "Buys cinema tickets for a showing."),
            ("get_movie_reviews", "Gets critics' reviews of the films showing in a city."),
            ("list_new_releases", "Lists the films released in a city's cinemas this week."),
        ]),
        Domain(properties: [p("ingredients", string("Ingredients at hand, separated by commas.")),
                            p("max_minutes", integer("Longest time to cook, in minutes.", minimum: 5, maximum: 240)),
                            p("vegetarian", boolean("Whether the dish must be vegetarian."))], tools: [
            ("search_recipes", "Searches for recipes that use the ingredients at hand."),
            ("get_recipe_steps", "Gets the steps of a recipe one by one."),
            ("add_to_shopping_list", "Adds what a recipe needs to the user's shopping list."),
            ("plan_weekly_meals", "Plans a week of dinners from the ingredients at hand."),
        ]),
        Domain(properties: [p("artist", string("Name of the artist or band.")), p("device", string("Speaker or phone to play on."))], tools: [
            ("play_song", "Plays a song by an artist on a speaker."),
            ("pause_music", "Pauses the music playing on a speaker."),
            ("create_playlist", "Creates a playlist of an artist's best-known songs."),
            ("skip_track", "Skips to the next song on a speaker."),
        ]),
        Domain(properties: [p("room", string("Room of the house, such as kitchen.")),
                            p("temperature", decimal("Target temperature in degrees Celsius.", minimum: 5)),
                            p("mode", string("How to reach it.", enum: ["heat", "cool", "auto"]))], tools: [
            ("set_thermostat", "Sets the thermostat of a room to a temperature."),
            ("get_indoor_temperature", "Gets the temperature and humidity in a room now."),
            ("schedule_heating", "Schedules the heating of a room for the mornings."),
            ("turn_off_heating", "Turns off the heating and cooling in a room."),
        ]),
        Domain(properties: [p("room", string("Room of the house, such as kitchen.")),
                            p("brightness", integer("Brightness in percent.", minimum: 0, maximum: 100)),
                            p("color", string("Colour name or hex code, such as warm white."))], tools: [
            ("turn_on_lights", "Turns on the lights in a room."),
            ("dim_lights", "Dims the lights in a room to a brightness."),
            ("turn_off_lights", "Turns off the lights in a room."),
            ("set_light_scene", "Sets the lights in a room to a saved scene."),
        ]),
        Domain(properties: [p("door", string("Which door.", enum: ["front", "back", "garage"])), p("pin", string("The owner's PIN code."))], tools: [
            ("lock_door", "Locks a door of the house."),
            ("unlock_door", "Unlocks a door of the house for a visitor."),
            ("get_lock_status", "Gets whether each door of the house is locked."),
            ("share_door_code", "Shares a temporary door code with a guest."),
        ]),
        Domain(properties: [p("ticket_id", string("The support ticket's identifier.")),
                            p("priority", string("How urgent the issue is.", enum: ["low", "normal", "high"]))], tools: [
            ("open_support_ticket", "Opens a support ticket for the customer's issue."),
            ("escalate_ticket", "Escalates a support ticket to a senior agent."),
            ("close_ticket", "Closes a support ticket whose issue is solved."),
            ("get_ticket_updates", "Gets the latest replies on a support ticket."),
        ]),
        Domain(properties: [p("plan", string("Subscription plan.", enum: ["basic", "plus", "pro"])),
                            p("billing_cycle", string("How often to bill.", enum: ["monthly", "yearly"]))], tools: [
            ("change_subscription_plan", "Moves the customer's subscription to another plan."),
            ("cancel_subscription", "Cancels the customer's subscription at the end of the period."),
            ("pause_subscription", "Pauses the customer's subscription for a month."),
            ("get_subscription_invoice", "Gets the latest invoice of the customer's subscription."),
        ]),
        Domain(properties: [p("prescription_id", string("Identifier on the prescription label.")),
                            p("pharmacy", string("Name or address of the pharmacy."))], tools: [
            ("refill_prescription", "Asks a pharmacy to refill a prescription."),
            ("check_prescription_status", "Checks whether a refilled prescription is ready to collect."),
            ("find_pharmacy", "Finds the nearest pharmacy open now."),
            ("transfer_prescription", "Moves a prescription to another pharmacy."),
        ]),
        Domain(properties: [p("location", string("Address or landmark to park near.")),
                            p("hours", decimal("How long to park, in hours.", minimum: 0.5))], tools: [
            ("find_parking", "Finds car parks with free spaces near a place."),
            ("reserve_parking_spot", "Reserves a parking space near a place for some hours."),
            ("extend_parking", "Extends the time paid for in a car park."),
            ("pay_parking_fine", "Pays a parking fine online."),
        ]),
        Domain(properties: [origin, destination, date], tools: [
            ("search_trains", "Searches for trains between two stations on a date."),
            ("book_train_ticket", "Books a train ticket between two stations on a date."),
            ("get_train_delays", "Gets the delays on the line between two stations today."),
            ("choose_train_seat", "Chooses a seat on a booked train."),
        ]),
        Domain(properties: [p("pickup_location", string("Where to collect the car.")),
                            p("pickup_date", string("Collection date, YYYY-MM-DD.", format: "date")),
                            p("days", integer("How many days to keep the car.", minimum: 1, maximum: 60))], tools: [
            ("search_rental_cars", "Searches for rental cars free for some days."),
            ("reserve_rental_car", "Reserves a rental car for some days."),
            ("cancel_car_rental", "Cancels a car rental reserved earlier."),
            ("add_rental_insurance", "Adds full insurance cover to a car rental."),
        ]),
        Domain(properties: [p("member_id", string("Loyalty card identifier.")), p("program", string("Name of the loyalty programme."))], tools: [
            ("get_loyalty_points", "Gets the points on the member's loyalty card."),
            ("redeem_points", "Redeems loyalty points for a voucher."),
            ("transfer_points", "Transfers loyalty points to another member."),
            ("list_rewards", "Lists the rewards the member's points can buy."),
        ]),
        Domain(properties: [p("topic", string("Subject, such as sport or science.")), p("country", string("ISO 3166 country code."))], tools: [
            ("get_news_headlines", "Gets today's headlines on a topic in a country."),
            ("summarize_article", "Summarizes a news article in three sentences."),
            ("follow_topic", "Follows a topic so that its news is sent to the user each morning."),
            ("list_saved_articles", "Lists the articles the user saved to read later."),
        ]),
        Domain(properties: [p("clinic", string("Name of the clinic or doctor.")), date,
                            p("visit_reason", string("Why the patient wants to be seen."))], tools: [
            ("book_appointment", "Books an appointment with a doctor on a date."),
            ("reschedule_appointment", "Moves an appointment with a doctor to another date."),
            ("cancel_appointment", "Cancels an appointment with a doctor."),
            ("list_open_appointments", "Lists the appointments a clinic still has free on a date."),
        ]),
        Domain(properties: [p("text", string("Text to work on.")), p("target_language", string("ISO 639-1 language code, such as fr.")),
                            p("formal", boolean("Whether to use the formal register."))], tools: [
            ("translate_text", "Translates a text into another language."),
            ("detect_language", "Detects which language a text is written in."),
            ("get_word_definition", "Gets the dictionary definition of a word."),
            ("check_spelling", "Checks a text for spelling mistakes."),
        ]),
        Domain(properties: [p("item", string("What to buy, such as oat milk.")),
                            p("quantity", integer("How many.", minimum: 1, maximum: 99)), p("store", string("Which shop."))], tools: [
            ("add_grocery_item", "Adds an item to the grocery order."),
            ("place_grocery_order", "Places the grocery order with a shop."),
            ("schedule_grocery_delivery", "Schedules the delivery of the grocery order."),
            ("find_store_hours", "Finds the opening hours of a shop today."),
        ]),
    ]
}
